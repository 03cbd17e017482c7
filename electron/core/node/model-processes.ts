// A model's process, whichever runs it: the node's supervisor, or the co-runner (LocalAI) that shares its backend
// directories. Loads go to the supervisor; respawn, restart, stop and unload go to the one that runs the model. Each
// runs beside the backend's other loads and never during a swap of it.
import { HangarError } from '../../../shared/errors.ts';
import type { LoadResult, ProcessView, RestartOptions } from '../../../shared/types.ts';
import type { KeyedLock } from '../locks.ts';
import type { BackendTarget, Supervisor } from '../supervisor/index.ts';
import type { CoRunner } from './co-runner.ts';

export class ModelProcesses {
  constructor(
    private readonly supervisor: Supervisor,
    private readonly coRunner: CoRunner | null,
    private readonly locks: KeyedLock,
  ) {}

  /** Loads `model` on `target` with the restart options given (those left out are the supervisor's defaults). */
  load(target: BackendTarget, model: string, options: RestartOptions): Promise<LoadResult> {
    const { restart, restartDelayMs, maxRestarts, startTimeoutMs } = options;
    const asked = {
      ...(restart && { restart }),
      ...(restartDelayMs !== undefined && { restartDelayMs }),
      ...(maxRestarts !== undefined && { maxRestarts }),
      ...(startTimeoutMs !== undefined && { startTimeoutMs }),
    };
    return this.locks.shared(target.name, () => this.supervisor.load(target, model, asked));
  }

  /** Stops every model the supervisor runs, one after the other; returns their names. */
  async stopAll(): Promise<string[]> {
    const models = this.supervisor.list().map((p) => p.model);
    for (const model of models) {
      await this.stop(model).catch((error: unknown) => {
        // One that ended meanwhile is as good as stopped.
        if (!(error instanceof HangarError && error.code === 'not-found')) throw error;
      });
    }
    return models;
  }

  respawn(model: string): Promise<ProcessView> {
    return this.onProcess(model, (coRunner) => (coRunner ? coRunner.respawn(model) : this.supervisor.respawn(model)));
  }

  restart(model: string): Promise<ProcessView> {
    return this.onProcess(model, (coRunner) => (coRunner ? coRunner.respawn(model) : this.supervisor.restart(model)));
  }

  async stop(model: string): Promise<void> {
    await this.onProcess(model, (coRunner) => (coRunner ? coRunner.unload([model]) : this.supervisor.stop(model)));
  }

  /** Frees the model's memory; a co-runner's model is stopped (LocalAI unloads a model only with its process). */
  /** Every process of the backend, from its live directory; never during a swap of it. */
  respawnBackend(backend: string): Promise<ProcessView[]> {
    return this.locks.run(backend, () => this.supervisor.respawnBackend(backend));
  }

  /** A process by pid: a model's is stopped as the model is; another only once the supervisor vetted it. */
  async stopProcess(pid: number): Promise<void> {
    const { model } = await this.supervisor.stoppable(pid);
    if (model !== null) await this.stop(model);
    else await this.supervisor.stopStranger(pid);
  }

  async unload(model: string): Promise<ProcessView> {
    const process = this.processOf(model);
    const coRunner = this.coRunnerOf(model);
    if (!coRunner) return this.locks.shared(process.backend, () => this.supervisor.unload(model));
    await this.locks.shared(process.backend, () => coRunner.unload([model]));
    return { ...process, state: 'exited', loaded: false, message: `unloaded by ${coRunner.name}` };
  }

  private onProcess<T>(model: string, work: (coRunner: CoRunner | null) => Promise<T>): Promise<T> {
    const process = this.processOf(model);
    const coRunner = this.coRunnerOf(model);
    return this.locks.shared(process.backend, () => work(coRunner));
  }

  private processOf(model: string): ProcessView {
    const process = this.supervisor.get(model) ?? this.coRunner?.processes().find((p) => p.model === model);
    if (!process) throw new HangarError('not-found', `no process for model ${model}`);
    return process;
  }

  /** The co-runner, when `model` is its own and not the supervisor's. */
  private coRunnerOf(model: string): CoRunner | null {
    return this.coRunner && !this.supervisor.get(model) && this.coRunner.owns(model) ? this.coRunner : null;
  }
}
