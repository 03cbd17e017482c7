// The GPU vendors' own tools, found on PATH and read in the formats their documentation gives: nvidia-smi's CSV
// queries (`--format=csv,noheader,nounits`: MiB and percent), rocm-smi's `--json` (bytes, as strings, one object
// per card), xpu-smi's `discovery --json`. Capability detection and the node's resources both read them here.
import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { GpuView } from '../../../shared/types.ts';

const MiB = 1024 * 1024;
/** A tool that does not answer within this long is given up on (a hung driver must not stall the node). */
export const TOOL_TIMEOUT_MS = 2000;

export const NVIDIA_GPUS = ['--query-gpu=index,name,memory.total,memory.used,utilization.gpu', '--format=csv,noheader,nounits'];
export const NVIDIA_APPS = ['--query-compute-apps=pid,used_memory', '--format=csv,noheader,nounits'];
export const ROCM_GPUS = ['--showproductname', '--showmeminfo', 'vram', '--showuse', '--json'];
export const XPU_DEVICES = ['discovery', '--json'];

export function onPath(command: string, env: NodeJS.ProcessEnv = process.env): boolean {
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

/** Runs a tool without a shell; its stdout, or an Error that says why not. */
export function runTool(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { encoding: 'utf8', timeout: TOOL_TIMEOUT_MS, killSignal: 'SIGKILL', maxBuffer: 4 * MiB, env }, (error, stdout) => {
      if (!error) return resolve(stdout);
      const why = error.killed ? `no answer within ${TOOL_TIMEOUT_MS / 1000} s` : `failed (${error.code ?? error.signal ?? error.message.split('\n')[0]})`;
      reject(new Error(`${command} ${why}`));
    });
  });
}

/** A number from a tool's field; "[N/A]", "[Not Supported]" and blanks are unknown. */
function figure(text: string | undefined): number | null {
  const value = Number(text?.trim());
  return text === undefined || text.trim() === '' || !Number.isFinite(value) ? null : value;
}

const mib = (value: number | null) => (value === null ? null : Math.round(value * MiB));

/** `nvidia-smi --query-gpu=index,name,memory.total,memory.used,utilization.gpu`: a name may hold commas, the rest never. */
export function parseNvidiaGpus(csv: string): GpuView[] {
  return csv.split('\n').flatMap((line): GpuView[] => {
    const fields = line.split(',').map((f) => f.trim());
    if (fields.length < 5) return [];
    const [index, ...rest] = fields;
    const [total, used, utilization] = rest.splice(-3);
    return [{ vendor: 'nvidia', index: figure(index) ?? 0, model: rest.join(', '), vramTotalBytes: mib(figure(total)), vramUsedBytes: mib(figure(used)), utilization: figure(utilization) }];
  });
}

/** `nvidia-smi --query-compute-apps=pid,used_memory`: each process's GPU memory (summed over GPUs), in bytes. */
export function parseNvidiaApps(csv: string): Map<number, number> {
  const byPid = new Map<number, number>();
  for (const line of csv.split('\n')) {
    const [pidText, usedText] = line.split(',');
    const pid = figure(pidText);
    const used = figure(usedText);
    if (pid === null || used === null || !Number.isInteger(pid)) continue;
    byPid.set(pid, (byPid.get(pid) ?? 0) + used * MiB);
  }
  return byPid;
}

/**
 * `rocm-smi --showproductname --showmeminfo vram --showuse --json`: `{"card0": {"Card series": …, "VRAM Total
 * Memory (B)": "…", "VRAM Total Used Memory (B)": "…", "GPU use (%)": "…"}, "system": {…}}`. Key case varies between
 * ROCm releases ("Card series" / "Card Series"), and some print warnings before the JSON.
 */
export function parseRocmGpus(text: string): GpuView[] {
  const start = text.indexOf('{');
  let data: unknown;
  try {
    data = JSON.parse(text.slice(Math.max(0, start)));
  } catch {
    return [];
  }
  if (typeof data !== 'object' || data === null) return [];
  return Object.entries(data as Record<string, unknown>).flatMap(([card, fields]): GpuView[] => {
    const match = /^card(\d+)$/.exec(card);
    if (!match || typeof fields !== 'object' || fields === null) return [];
    const lower = new Map(Object.entries(fields).map(([k, v]) => [k.toLowerCase(), typeof v === 'string' || typeof v === 'number' ? String(v) : undefined]));
    const known = (key: string) => {
      const value = lower.get(key);
      return value && value !== 'N/A' ? value : undefined;
    };
    const model = known('card series') ?? known('card model') ?? known('card sku') ?? 'AMD GPU';
    return [{
      vendor: 'amd',
      index: Number(match[1]),
      model,
      vramTotalBytes: figure(known('vram total memory (b)')),
      vramUsedBytes: figure(known('vram total used memory (b)')),
      utilization: figure(known('gpu use (%)')),
    }];
  });
}

/** `xpu-smi discovery --json`: each device's name and `memory_physical_size_byte` (a number or a string of one). */
export function parseXpuDevices(text: string): GpuView[] {
  let list: unknown;
  try {
    list = (JSON.parse(text) as { device_list?: unknown }).device_list;
  } catch {
    return [];
  }
  if (!Array.isArray(list)) return [];
  return list.flatMap((device: Record<string, unknown>, i): GpuView[] => {
    if (typeof device !== 'object' || device === null) return [];
    const size = figure(device.memory_physical_size_byte === undefined ? undefined : String(device.memory_physical_size_byte));
    const index = typeof device.device_id === 'number' ? device.device_id : i;
    const model = typeof device.device_name === 'string' ? device.device_name : 'Intel GPU';
    return [{ vendor: 'intel', index, model, vramTotalBytes: size, vramUsedBytes: null, utilization: null }];
  });
}
