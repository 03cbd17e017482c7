// Loading a model into its process: LoadModel with the row in state loading, and again in every later process.
import { join } from 'node:path';
import { HangarError } from '../../../shared/index.ts';
import { BackendCallError, type LoadModelRequest } from './grpc-client.ts';
import type { ModelSpec, Proc, ProcessRecords } from './records.ts';

export class Loader {
  constructor(
    private readonly records: ProcessRecords,
    private readonly modelsDir: string,
    private readonly timeoutMs: number,
  ) {}

  /** What loading `model` asks of its backend: the model's file under the models directory. */
  request(model: string): LoadModelRequest {
    return { model, modelFile: join(this.modelsDir, model), modelPath: this.modelsDir };
  }

  /** LoadModel with the row in state loading, then ready with the model loaded. */
  async into(proc: Proc, request: LoadModelRequest): Promise<string> {
    proc.state = 'loading';
    this.records.publish(proc);
    const result = await proc.client.loadModel(request, this.timeoutMs).finally(() => {
      if (!proc.retired && proc.state === 'loading') proc.state = 'ready';
    });
    if (!result.success) throw new Error(result.message);
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
