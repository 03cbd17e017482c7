// What the machine has and uses: CPUs and load, memory (/proc/meminfo), the backends filesystem (statfs), and each
// GPU as its vendor's tool reports it, with the GPU memory each supervised process holds. The tools run
// asynchronously with a timeout and at most once per refresh interval: a heartbeat reads the last answer.
import { readFile, statfs } from 'node:fs/promises';
import { availableParallelism, freemem, loadavg, totalmem } from 'node:os';
import type { NodeResources, ProcessVram, ResourcesView } from '../../../shared/types.ts';
import { processStartTime } from '../supervisor/identity.ts';
import { processTree } from '../supervisor/process-tree.ts';
import type { GpuReading } from '../platform/types.ts';
import { readVendorGpus } from '../platform/vendor-gpus.ts';

const DEFAULT_REFRESH_MS = 5000;

export interface MachineResourcesOptions {
  /** Whose filesystem's free space counts. */
  backendsDir: string;
  /** The supervised processes, whose trees' GPU memory is summed. */
  processes(): Array<{ model: string; pid: number }>;
  env?: NodeJS.ProcessEnv;
  refreshMs?: number;
}

export class MachineResources {
  private gpu: GpuReading | null = null;
  private readAt = 0;
  private reading: Promise<GpuReading> | null = null;

  constructor(private readonly options: MachineResourcesOptions) {}

  /** The machine now; the GPU part is the last tools' answer, read again in the background once it is old. */
  async current(): Promise<ResourcesView> {
    const gpu = await this.gpuReading();
    const [memory, disk] = await Promise.all([readMemory(), this.readDisk()]);
    const resources: NodeResources = {
      cpu: { count: availableParallelism(), load1: Math.round(loadavg()[0]! * 100) / 100 },
      memory,
      disk,
      gpus: gpu.gpus,
      gpuTools: gpu.tools,
      gpuProblem: gpu.problem,
      at: new Date().toISOString(),
    };
    return { ...resources, processes: this.processVram(gpu.byPid) };
  }

  private async gpuReading(): Promise<GpuReading> {
    const stale = Date.now() - this.readAt >= (this.options.refreshMs ?? DEFAULT_REFRESH_MS);
    if (stale && !this.reading) {
      this.reading = readVendorGpus(this.options.env ?? process.env).then((reading) => {
        this.gpu = reading;
        this.readAt = Date.now();
        return reading;
      }).finally(() => (this.reading = null));
    }
    return this.gpu ?? (await this.reading!);
  }

  private async readDisk(): Promise<NodeResources['disk']> {
    try {
      const s = await statfs(this.options.backendsDir);
      return { totalBytes: s.blocks * s.bsize, freeBytes: s.bavail * s.bsize };
    } catch {
      return null;
    }
  }

  /** Each supervised process with the GPU memory of its whole tree (a backend's run.sh starts the real server). */
  private processVram(byPid: Map<number, number>): ProcessVram[] {
    if (byPid.size === 0) return [];
    return this.options.processes().flatMap(({ model, pid }) => {
      // The process as it is now: this counts memory, it signals nothing.
      const vramBytes = processTree({ pid, startTime: processStartTime(pid), cgroup: null }).reduce((sum, member) => sum + (byPid.get(member.pid) ?? 0), 0);
      return vramBytes > 0 ? [{ model, pid, vramBytes }] : [];
    });
  }
}

/** MemTotal and MemAvailable from /proc/meminfo (kB); the OS's own figures where there is no /proc. */
async function readMemory(): Promise<NodeResources['memory']> {
  const text = await readFile('/proc/meminfo', 'utf8').catch(() => null);
  if (text === null) return { totalBytes: totalmem(), availableBytes: freemem() };
  const kb = (field: string) => {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
    return match ? Number(match[1]) * 1024 : null;
  };
  const total = kb('MemTotal');
  const available = kb('MemAvailable') ?? kb('MemFree');
  return total === null || available === null ? null : { totalBytes: total, availableBytes: available };
}
