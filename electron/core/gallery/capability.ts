// Which build of a meta backend suits this machine: the same facts LocalAI reads (forced values, PCI vendor ids
// under /sys/class/drm, the NVIDIA driver, Tegra SoCs, the vendors' tools and vulkaninfo, CUDA toolkit folders, Apple
// silicon, VRAM of more than 4 GiB).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { onPath, parseXpuDevices } from '../machine/gpu-tools.ts';
import { parseVulkanInfo } from './vulkan-vram.ts';

type Vendor = 'nvidia' | 'amd' | 'intel' | 'vulkan';

const pciVendors: Record<string, Vendor> = { '0x10de': 'nvidia', '0x1002': 'amd', '0x8086': 'intel' };
const vendorPriority: Vendor[] = ['nvidia', 'amd', 'intel'];
const drmRoot = '/sys/class/drm';
const minVramBytes = 4 * 1024 ** 3;
const probeTimeoutMs = 2000;

let hostCapability: string | undefined;

const DEFAULT_RUN_FILE = '/run/localai/capability';
/** The characters Go's strings.TrimSpace removes (unicode.IsSpace); JavaScript's trim() differs on U+0085 and U+FEFF. */
const GO_SPACE = '[\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const GO_TRIM = new RegExp(`^${GO_SPACE}+|${GO_SPACE}+$`, 'gu');

/**
 * The capability key for this machine. Forced values win, in this order: HANGAR_FORCE_CAPABILITY (trimmed, ignored
 * when blank), then exactly as LocalAI reads them (pkg/system/capabilities.go getSystemCapabilities):
 * LOCALAI_FORCE_META_BACKEND_CAPABILITY verbatim whenever it is not empty, blanks included; then the file named by
 * LOCALAI_FORCE_META_BACKEND_CAPABILITY_RUN_FILE (default /run/localai/capability), trimmed, whenever it can be read,
 * even when that leaves nothing. A capability that names no key ("" or blanks) resolves to the `default`/`cpu`
 * builds, as in LocalAI. Hardware is probed once per process and cached.
 */
export function detectCapability(env: NodeJS.ProcessEnv = process.env): string {
  const hangar = env.HANGAR_FORCE_CAPABILITY?.trim();
  if (hangar) return hangar;
  const forced = env.LOCALAI_FORCE_META_BACKEND_CAPABILITY;
  if (forced) return forced;
  const runFile = readRunFile(env.LOCALAI_FORCE_META_BACKEND_CAPABILITY_RUN_FILE || DEFAULT_RUN_FILE);
  if (runFile !== null) return runFile;
  hostCapability ??= probeHost(env);
  return hostCapability;
}

/** The run file's content trimmed as Go trims it, or null when it cannot be read (missing, a directory). */
function readRunFile(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').replace(GO_TRIM, '');
  } catch {
    return null;
  }
}

function probeHost(env: NodeJS.ProcessEnv): string {
  if (process.platform === 'darwin') return process.arch === 'arm64' ? 'metal' : 'darwin-x86';
  const vendor = gpuVendor(env);
  if (!vendor) return 'default';
  if (vendor === 'nvidia' && process.platform === 'linux' && process.arch === 'arm64') return withCuda('nvidia-l4t');
  // Too little VRAM to serve from (or none measurable, as on most integrated GPUs): the CPU build is the better pick.
  if (vram(vendor, env) <= minVramBytes) return 'default';
  return vendor === 'nvidia' ? withCuda('nvidia') : vendor;
}

/** Refines an NVIDIA capability by the CUDA toolkit installed, as LocalAI does. */
function withCuda(base: string): string {
  if (existsSync('/usr/local/cuda-13')) return `${base}-cuda-13`;
  if (existsSync('/usr/local/cuda-12')) return `${base}-cuda-12`;
  return base;
}

function gpuVendor(env: NodeJS.ProcessEnv): Vendor | null {
  const cards = drmCards();
  const fromPci = vendorPriority.find((vendor) => cards.some((card) => card.vendor === vendor));
  if (fromPci) return fromPci;
  if (listDir('/proc/driver/nvidia/gpus').length > 0 || isTegra()) return 'nvidia';
  if (onPath('nvidia-smi', env)) return 'nvidia';
  if (onPath('rocm-smi', env)) return 'amd';
  if (onPath('xpu-smi', env) || onPath('intel_gpu_top', env)) return 'intel';
  // Last, as in LocalAI: a Vulkan loader sees any GPU, but names no vendor build.
  if (onPath('vulkaninfo', env)) return 'vulkan';
  return null;
}

/** GPUs under /sys/class/drm (cardN, not its connectors cardN-HDMI-A-1), by PCI vendor id. */
function drmCards(): { card: string; vendor: Vendor }[] {
  return listDir(drmRoot)
    .filter((name) => /^card\d+$/.test(name))
    .flatMap((card) => {
      const vendor = pciVendors[readText(join(drmRoot, card, 'device', 'vendor')).toLowerCase()];
      return vendor ? [{ card, vendor }] : [];
    });
}

function isTegra(): boolean {
  return (
    readText('/sys/devices/soc0/family') === 'Tegra' ||
    readText('/sys/devices/soc0/soc_id').startsWith('jep106:0426') ||
    (process.arch === 'arm64' && existsSync('/etc/nv_tegra_release'))
  );
}

/**
 * Total VRAM in bytes, 0 when it cannot be measured. As LocalAI (pkg/xsysinfo/gpu.go GetGPUMemoryUsage): the
 * vendors' tools (nvidia-smi, rocm-smi, xpu-smi) summed, vulkaninfo's device-local heaps for a Vulkan-only GPU;
 * then the amdgpu driver's own count under /sys.
 */
function vram(vendor: Vendor, env: NodeJS.ProcessEnv): number {
  const fromTools =
    toolBytes('nvidia-smi', ['--query-gpu=memory.total', '--format=csv,noheader,nounits'], env, parseNvidiaSmi) +
    toolBytes('rocm-smi', ['--showmeminfo', 'vram', '--csv'], env, parseRocmSmi) +
    toolBytes('xpu-smi', ['discovery', '--json'], env, parseXpuSmi);
  if (fromTools > 0) return fromTools;
  if (vendor === 'vulkan') return toolBytes('vulkaninfo', ['--text'], env, parseVulkanInfo);
  return drmCards()
    .filter((card) => card.vendor === vendor)
    .reduce((sum, { card }) => sum + (Number(readText(join(drmRoot, card, 'device', 'mem_info_vram_total'))) || 0), 0);
}

function toolBytes(command: string, args: string[], env: NodeJS.ProcessEnv, parse: (out: string) => number): number {
  if (!onPath(command, env)) return 0;
  try {
    const out = execFileSync(command, args, { encoding: 'utf8', timeout: probeTimeoutMs, killSignal: 'SIGKILL', stdio: ['ignore', 'pipe', 'ignore'], env });
    return parse(out);
  } catch {
    return 0;
  }
}

/** nvidia-smi memory.total lines, in MiB. */
export function parseNvidiaSmi(out: string): number {
  return out.split('\n').reduce((sum, line) => sum + (Number(line.trim()) || 0), 0) * 1024 * 1024;
}

/** rocm-smi --showmeminfo vram --csv: a header, then `GPU[i],total,used`; small numbers are MiB, as LocalAI reads them. */
export function parseRocmSmi(out: string): number {
  return out
    .trim()
    .split('\n')
    .slice(1)
    .reduce((sum, line) => {
      const total = Number(line.split(',')[1]?.trim()) || 0;
      return sum + (total < 1_000_000 ? total * 1024 * 1024 : total);
    }, 0);
}

/** xpu-smi discovery --json: each device's memory_physical_size_byte. */
export function parseXpuSmi(out: string): number {
  return parseXpuDevices(out).reduce((sum, d) => sum + (d.vramTotalBytes ?? 0), 0);
}

function listDir(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return '';
  }
}
