// Which build of a meta backend suits this machine: the same facts LocalAI reads (forced values, PCI vendor ids
// under /sys/class/drm, the NVIDIA driver, Tegra SoCs, CUDA toolkit folders, Apple silicon, VRAM of at least 4 GiB).
import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';

type Vendor = 'nvidia' | 'amd' | 'intel';

const pciVendors: Record<string, Vendor> = { '0x10de': 'nvidia', '0x1002': 'amd', '0x8086': 'intel' };
const vendorPriority: Vendor[] = ['nvidia', 'amd', 'intel'];
const drmRoot = '/sys/class/drm';
const minVramBytes = 4 * 1024 ** 3;
const probeTimeoutMs = 2000;

let hostCapability: string | undefined;

/**
 * The capability key for this machine. Forced values win, in this order: HANGAR_FORCE_CAPABILITY,
 * LOCALAI_FORCE_META_BACKEND_CAPABILITY, then the file named by LOCALAI_FORCE_META_BACKEND_CAPABILITY_RUN_FILE
 * (default /run/localai/capability). Hardware is probed once per process and cached.
 */
export function detectCapability(env: NodeJS.ProcessEnv = process.env): string {
  const forced = env.HANGAR_FORCE_CAPABILITY?.trim() || env.LOCALAI_FORCE_META_BACKEND_CAPABILITY?.trim();
  if (forced) return forced;
  const runFile = readText(env.LOCALAI_FORCE_META_BACKEND_CAPABILITY_RUN_FILE || '/run/localai/capability');
  if (runFile) return runFile;
  hostCapability ??= probeHost(env);
  return hostCapability;
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

/** Total VRAM in bytes of the vendor's GPUs, 0 when it cannot be measured. */
function vram(vendor: Vendor, env: NodeJS.ProcessEnv): number {
  if (vendor === 'nvidia') return nvidiaVram(env);
  return drmCards()
    .filter((card) => card.vendor === vendor)
    .reduce((sum, { card }) => sum + (Number(readText(join(drmRoot, card, 'device', 'mem_info_vram_total'))) || 0), 0);
}

function nvidiaVram(env: NodeJS.ProcessEnv): number {
  try {
    const out = execFileSync('nvidia-smi', ['--query-gpu=memory.total', '--format=csv,noheader,nounits'], {
      encoding: 'utf8',
      timeout: probeTimeoutMs,
      killSignal: 'SIGKILL',
      stdio: ['ignore', 'pipe', 'ignore'],
      env,
    });
    return out.split('\n').reduce((sum, line) => sum + (Number(line.trim()) || 0), 0) * 1024 * 1024;
  } catch {
    return 0;
  }
}

function onPath(command: string, env: NodeJS.ProcessEnv): boolean {
  const names = process.platform === 'win32' ? [`${command}.exe`] : [command];
  return (env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && names.some((name) => isExecutable(join(dir, name))));
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
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
