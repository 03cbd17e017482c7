// What macOS says of its memory and GPUs, in the formats its tools print: `sysctl -n hw.memsize` (bytes),
// `vm_stat` (page counts, "Pages free:   12345."), and `system_profiler SPDisplaysDataType -json`.
import { freemem, totalmem } from 'node:os';
import type { GpuView, NodeResources } from '../../../shared/types.ts';
import { run } from './ps.ts';

/**
 * Available memory as Activity Monitor's "could be used without swapping": free + speculative + inactive pages
 * (vm_stat's "free" leaves the speculative ones out).
 */
export function parseVmStat(text: string, totalBytes: number): NodeResources['memory'] {
  const page = Number(/page size of (\d+) bytes/.exec(text)?.[1]);
  const pages = (label: string) => Number(new RegExp(`^Pages ${label}:\\s+(\\d+)\\.`, 'm').exec(text)?.[1] ?? NaN);
  const available = (pages('free') + pages('speculative') + pages('inactive')) * page;
  return Number.isFinite(available) && totalBytes > 0 ? { totalBytes, availableBytes: available } : null;
}

export async function darwinMemory(): Promise<NodeResources['memory']> {
  try {
    const [memsize, vmStat] = await Promise.all([run('sysctl', ['-n', 'hw.memsize']), run('vm_stat', [])]);
    return parseVmStat(vmStat, Number(memsize.trim()));
  } catch {
    return { totalBytes: totalmem(), availableBytes: freemem() };
  }
}

interface DisplayEntry {
  _name?: string;
  sppci_model?: string;
  spdisplays_vendor?: string;
  spdisplays_vram?: string;
  spdisplays_vram_shared?: string;
  sppci_cores?: string;
}

const VENDORS: Array<[RegExp, GpuView['vendor']]> = [
  [/apple/i, 'apple'],
  [/nvidia/i, 'nvidia'],
  [/amd|ati/i, 'amd'],
  [/intel/i, 'intel'],
];

/** Each GPU system_profiler lists. An Apple GPU shares the machine's memory: it has no VRAM figure of its own. */
export function parseDisplays(json: string): GpuView[] {
  const entries = (JSON.parse(json) as { SPDisplaysDataType?: DisplayEntry[] }).SPDisplaysDataType ?? [];
  return entries.flatMap((entry, index): GpuView[] => {
    const vendor = VENDORS.find(([pattern]) => pattern.test(entry.spdisplays_vendor ?? entry.sppci_model ?? ''))?.[1];
    if (!vendor) return [];
    const model = entry.sppci_model ?? entry._name ?? 'GPU';
    return [{ vendor, index, model, vramTotalBytes: vendor === 'apple' ? null : size(entry.spdisplays_vram), vramUsedBytes: null, utilization: null }];
  });
}

/** "8 GB", "1536 MB" as bytes. */
function size(text: string | undefined): number | null {
  const m = /^(\d+(?:\.\d+)?)\s*(MB|GB)$/i.exec(text?.trim() ?? '');
  if (!m) return null;
  return Math.round(Number(m[1]) * 1024 ** (m[2]!.toUpperCase() === 'GB' ? 3 : 2));
}
