// The machine figures every OS gives the same way: CPUs and load from the OS, free space of a filesystem (statfs).
import { statfs } from 'node:fs/promises';
import { availableParallelism, loadavg } from 'node:os';
import type { NodeResources } from '../../../shared/types.ts';

export function cpuFigures(): NodeResources['cpu'] {
  return { count: availableParallelism(), load1: Math.round(loadavg()[0]! * 100) / 100 };
}

export async function diskFigures(dir: string): Promise<NodeResources['disk']> {
  try {
    const s = await statfs(dir);
    return { totalBytes: s.blocks * s.bsize, freeBytes: s.bavail * s.bsize };
  } catch {
    return null;
  }
}
