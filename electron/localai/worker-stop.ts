// Stopping one model on a LocalAI worker as LocalAI's frontend stops a replica (core/services/nodes/unloader.go,
// StopModelReplica): model.stop with the process key and the address it must still have, which stops that process
// alone and answers once it has exited. A worker from before model.stop gets backend.stop, the frontend's unload,
// unless the model is named like one of its backends: the worker reads that name as the backend's too
// (core/services/worker/supervisor.go, resolveStopTargets) and would stop every process of that backend.
import { setTimeout as sleep } from 'node:timers/promises';
import { HangarError } from '../../shared/errors.ts';
import { processKey, type RunningModel, type WorkerBackend } from './protocol.ts';
import { WorkerFailure, type WorkerClient } from './worker-client.ts';

export interface ModelStopContext {
  client: WorkerClient;
  localaiId: string;
  running(): Promise<RunningModel[]>;
  rows(): Promise<WorkerBackend[]>;
  pollMs: number;
}

/** How long a stop by backend.stop waits for the worker to drop the process (backend.stop has no reply). */
const STOP_WAIT_MS = 20_000;

/** Every replica of `model`, each by its own key. */
export async function stopModel(ctx: ModelStopContext, model: string): Promise<void> {
  const replicas = (await ctx.running()).filter((m) => m.model_id === model);
  if (replicas.length === 0) throw new HangarError('not-found', `no process runs for model ${model} on this worker`);
  for (const replica of replicas) {
    const request = { model_name: model, process_key: processKey(model, replica.replica_index), expected_address: replica.address };
    try {
      await ctx.client.stopModel(ctx.localaiId, request);
    } catch (error) {
      if (!(error instanceof WorkerFailure && error.reason === 'no-responders')) throw error;
      return stopByBackendStop(ctx, model);
    }
  }
}

/** backend.stop, fire-and-forget; done once models.running no longer lists the model. */
async function stopByBackendStop(ctx: ModelStopContext, model: string): Promise<void> {
  if ((await ctx.rows()).some((row) => row.name === model)) {
    throw new WorkerFailure(
      'refused',
      `it predates model.stop, and its backend.stop of ${model} would stop every process of backend ${model} as well: update the worker to stop one model alone`,
    );
  }
  await ctx.client.stop(ctx.localaiId, model);
  const deadline = Date.now() + STOP_WAIT_MS;
  while ((await ctx.running()).some((m) => m.model_id === model)) {
    if (Date.now() > deadline) throw new WorkerFailure('timeout', `it still runs ${model} ${STOP_WAIT_MS / 1000} s after backend.stop`);
    await sleep(ctx.pollMs);
  }
}
