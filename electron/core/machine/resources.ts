// What the machine has and uses: CPUs and load, memory, the backends filesystem, and each GPU as its vendor's tool
// (or macOS's system_profiler) reports it, with the GPU memory each supervised process holds; all through the
// platform layer. The tools run asynchronously with a timeout and at most once per refresh interval: a heartbeat
// reads the last answer.
import type { NodeResources, ProcessVram, ResourcesView } from '../../../shared/types.ts';
import { currentPlatform } from '../platform/index.ts';
import type { GpuReading, Platform } from '../platform/types.ts';

const DEFAULT_REFRESH_MS = 5000;

export interface MachineResourcesOptions {
  /** Whose filesystem's free space counts. */
  backendsDir: string;
  /** The supervised processes, whose trees' GPU memory is summed. */
  processes(): Array<{ model: string; pid: number }>;
  env?: NodeJS.ProcessEnv;
  refreshMs?: number;
  platform?: Platform;
}

export class MachineResources {
  private gpu: GpuReading | null = null;
  private readAt = 0;
  private reading: Promise<GpuReading> | null = null;
  private readonly platform: Platform;

  constructor(private readonly options: MachineResourcesOptions) {
    this.platform = options.platform ?? currentPlatform();
  }

  /** The machine now; the GPU part is the last tools' answer, read again in the background once it is old. */
  async current(): Promise<ResourcesView> {
    const gpu = await this.gpuReading();
    const machine = await this.platform.machine(this.options.backendsDir);
    const resources: NodeResources = { ...machine, gpus: gpu.gpus, gpuTools: gpu.tools, gpuProblem: gpu.problem, at: new Date().toISOString() };
    return { ...resources, processes: await this.processVram(gpu.byPid) };
  }

  private async gpuReading(): Promise<GpuReading> {
    const stale = Date.now() - this.readAt >= (this.options.refreshMs ?? DEFAULT_REFRESH_MS);
    if (stale && !this.reading) {
      this.reading = this.platform.gpus(this.options.env ?? process.env).then((reading) => {
        this.gpu = reading;
        this.readAt = Date.now();
        return reading;
      }).finally(() => (this.reading = null));
    }
    return this.gpu ?? (await this.reading!);
  }

  /** Each supervised process with the GPU memory of its whole tree (a backend's run.sh starts the real server). */
  private async processVram(byPid: Map<number, number>): Promise<ProcessVram[]> {
    if (byPid.size === 0) return [];
    const trees = await Promise.all(this.options.processes().map(async ({ model, pid }) => ({ model, pid, tree: await this.platform.tree(pid) })));
    return trees.flatMap(({ model, pid, tree }) => {
      const vramBytes = tree.reduce((sum, member) => sum + (byPid.get(member.pid) ?? 0), 0);
      return vramBytes > 0 ? [{ model, pid, vramBytes }] : [];
    });
  }
}
