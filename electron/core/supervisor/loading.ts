// Loading a model into its process: LoadModel with the row in state loading, and again in every later process;
// Free to unload it.
import { join } from 'node:path';
import { HangarError } from '../../../shared/index.ts';
import { BackendCallError, type LoadModelRequest } from './grpc-client.ts';
import { startCancelled, tell, type ModelSpec, type Proc, type ProcessRecords } from './process-records.ts';
import type { StartBudget } from './start-budget.ts';
import { oneLine } from '../../../shared/error-text.ts';

/** How long an unload waits for the backend's Free. */
const FREE_LIMIT_MS = 5000;

export class Loader {
  constructor(
    private readonly records: ProcessRecords,
    private readonly modelsDir: string,
    private readonly budget: StartBudget,
  ) {}

  /** What loading `model` asks of its backend: the model's file under the models directory. */
  request(model: string): LoadModelRequest {
    return { model, modelFile: join(this.modelsDir, model), modelPath: this.modelsDir };
  }

  /** LoadModel with the row in state loading, then ready with the model loaded. */
  async into(proc: Proc, request: LoadModelRequest): Promise<string> {
    const started = Date.now();
    const allowed = this.budget.allowed('load', proc.backend, this.records.spec(proc.model)?.startTimeoutMs ?? null);
    proc.state = 'loading';
    proc.deadline = started + allowed;
    this.records.publish(proc);
    const result = await proc.client.loadModel(request, allowed).catch((error: unknown) => {
      throw proc.cancelled ? startCancelled(proc) : error;
    }).finally(() => {
      proc.deadline = null;
      if (!proc.retired && proc.state === 'loading') proc.state = 'ready';
    });
    this.budget.record('load', proc.backend, Date.now() - started);
    if (!result.success) throw new HangarError('failed', result.message);
    proc.loaded = true;
    proc.error = null;
    this.records.publish(proc);
    return result.message;
  }

  /** Loads again what the model had loaded: state loading until LoadModel answers; a failure stays on the row. */
  async reload(proc: Proc, spec: ModelSpec): Promise<void> {
    if (!spec.load) return;
    try {
      await this.into(proc, spec.load);
    } catch (error) {
      this.fail(proc, new HangarError('failed', `reloading model ${proc.model} failed: ${loadError(proc, error).message}`));
    }
  }

  /** Free: the backend drops the model from memory and keeps running; the row says so until the next load. */
  async free(proc: Proc): Promise<void> {
    if (proc.state !== 'ready') throw new HangarError('conflict', `model ${proc.model}'s process is ${proc.state}, not ready: it cannot unload now`);
    const result = await proc.client.free(FREE_LIMIT_MS).catch((error: unknown) => ({ success: false, message: oneLine(error) }));
    if (!result.success) throw new HangarError('failed', `backend ${proc.backend} did not unload ${proc.model}: ${result.message || 'Free failed'}`);
    proc.loaded = false;
    tell(proc, 'model unloaded (Free): the process keeps running');
    this.records.publish(proc);
  }

  /** Puts a load failure on the row (the process runs, its model is not loaded) and returns it to throw. */
  fail(proc: Proc, error: HangarError): HangarError {
    proc.loaded = false;
    proc.error = error.message;
    if (!proc.retired) this.records.publish(proc);
    return error;
  }
}

/** A failed LoadModel as the user reads it: the backend's own words where it gave any. */
export function loadError(proc: Proc, err: unknown): HangarError {
  if (err instanceof HangarError) return err;
  const message = err instanceof BackendCallError ? err.details : (err as Error).message;
  return new HangarError('failed', `backend ${proc.backend} could not load model ${proc.model}: ${message}`);
}
