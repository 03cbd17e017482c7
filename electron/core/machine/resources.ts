// What the machine has and uses: CPUs and load, memory (/proc/meminfo), the backends filesystem (statfs), and each
// GPU as its vendor's tool reports it, with the GPU memory each supervised process holds. The tools run
// asynchronously with a timeout and at most once per refresh interval: a heartbeat reads the last answer.
import { readFile, statfs } from 'node:fs/promises';
import { availableParallelism, freemem, loadavg, totalmem } from 'node:os';
import type { GpuView, NodeResources, ProcessVram, ResourcesView } from '../../../shared/types.ts';
import { processStartTime } from '../supervisor/identity.ts';
import { processTree } from '../supervisor/process-tree.ts';
import { NVIDIA_APPS, NVIDIA_GPUS, ROCM_GPUS, XPU_DEVICES, onPath, parseNvidiaApps, parseNvidiaGpus, parseRocmGpus, parseXpuDevices, runTool } from './gpu-tools.ts';

const DEFAULT_REFRESH_MS = 5000;

export interface MachineResourcesOptions {
  /** Whose filesystem's free space counts. */
  backendsDir: string;
  /** The supervised processes, whose trees' GPU memory is summed. */
  processes(): Array<{ model: string; pid: number }>;
  env?: NodeJS.ProcessEnv;
  refreshMs?: number;
}

interface GpuReading {
  gpus: GpuView[];
  tools: string[];
  problem: string | null;
  /** pid -> GPU memory in bytes, where the tool reports it per process. */
  byPid: Map<number, number>;
}

interface Tool {
  command: string;
  read(env: NodeJS.ProcessEnv): Promise<{ gpus: GpuView[]; byPid?: Map<number, number> }>;
}

const TOOLS: Tool[] = [
  {
    command: 'nvidia-smi',
    read: async (env) => {
      const [gpus, apps] = await Promise.all([runTool('nvidia-smi', NVIDIA_GPUS, env), runTool('nvidia-smi', NVIDIA_APPS, env).catch(() => '')]);
      return { gpus: parseNvidiaGpus(gpus), byPid: parseNvidiaApps(apps) };
    },
  },
  { command: 'rocm-smi', read: async (env) => ({ gpus: parseRocmGpus(await runTool('rocm-smi', ROCM_GPUS, env)) }) },
  { command: 'xpu-smi', read: async (env) => ({ gpus: parseXpuDevices(await runTool('xpu-smi', XPU_DEVICES, env)) }) },
];

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
      this.reading = readGpus(this.options.env ?? process.env).then((reading) => {
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

async function readGpus(env: NodeJS.ProcessEnv): Promise<GpuReading> {
  const present = TOOLS.filter((tool) => onPath(tool.command, env));
  const answers = await Promise.allSettled(present.map((tool) => tool.read(env)));
  const reading: GpuReading = { gpus: [], tools: [], problem: null, byPid: new Map() };
  const problems: string[] = [];
  for (const [i, answer] of answers.entries()) {
    if (answer.status === 'rejected') {
      problems.push((answer.reason as Error).message);
      continue;
    }
    reading.tools.push(present[i]!.command);
    reading.gpus.push(...answer.value.gpus);
    for (const [pid, bytes] of answer.value.byPid ?? []) reading.byPid.set(pid, (reading.byPid.get(pid) ?? 0) + bytes);
  }
  reading.problem = problems.length > 0 ? problems.join('; ') : null;
  return reading;
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
