// Calls to LocalAI workers over their own NATS subjects, with LocalAI's request shapes and the frontend's time limits.
// Every reply is validated before it is read; a failure says which worker and why, in one line.
import { errors, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import type * as z from 'zod';
import { HangarError } from '../../shared/errors.ts';
import {
  deleteReplySchema,
  installReplySchema,
  listReplySchema,
  modelStopReplySchema,
  progressEventSchema,
  runningReplySchema,
  unloadReplySchema,
  upgradeReplySchema,
  WORKER_TIMEOUTS_MS,
  workerSubjects,
  type InstallRequest,
  type ModelStopRequest,
  type ProgressEvent,
  type RunningModel,
  type UpgradeRequest,
  type WorkerBackend,
} from './protocol.ts';

export type WorkerFailureReason = 'timeout' | 'no-responders' | 'malformed' | 'refused' | 'other';

/** Why a call to a worker got no usable answer. */
export class WorkerFailure extends Error {
  constructor(
    readonly reason: WorkerFailureReason,
    message: string,
  ) {
    super(message);
  }
}

/** What Hangar could not do on a worker, and why, as one sentence: "LocalAI worker gpu-b could not list its backends: …". */
export class WorkerCallError extends HangarError {
  /** The sentence without its subject: "could not list its backends: …". */
  readonly predicate: string;

  constructor(worker: string, what: string, reason: string) {
    super('failed', `LocalAI worker ${worker} could not ${what}: ${reason}`);
    this.predicate = `could not ${what}: ${reason}`;
  }
}

export type UpgradeReply = z.infer<typeof upgradeReplySchema>;

export interface UpgradeOutcome {
  reply: UpgradeReply;
  /** `install`: the worker has no upgrade handler, and took LocalAI's fallback, backend.install with force. */
  via: 'upgrade' | 'install';
}

/** The longest a progress event may be; LocalAI's are a few hundred bytes. */
const PROGRESS_MAX_BYTES = 16 * 1024;

export class WorkerClient {
  constructor(
    private readonly nc: NatsConnection,
    private readonly timeouts: typeof WORKER_TIMEOUTS_MS = WORKER_TIMEOUTS_MS,
  ) {}

  async list(id: string): Promise<WorkerBackend[]> {
    const reply = await this.request(workerSubjects.list(id), {}, this.timeouts.list, listReplySchema);
    if (reply.error) throw new WorkerFailure('other', `it says: ${reply.error}`);
    return reply.backends;
  }

  async running(id: string): Promise<RunningModel[]> {
    const reply = await this.request(workerSubjects.running(id), {}, this.timeouts.running, runningReplySchema);
    if (reply.error) throw new WorkerFailure('other', `it says: ${reply.error}`);
    return reply.models;
  }

  /** backend.install: installs from the galleries (unless the backend is there) and starts its process. */
  async install(id: string, request: Omit<InstallRequest, 'op_id'>, onProgress?: (event: ProgressEvent) => void): Promise<{ address: string }> {
    const reply = await this.withProgress(id, onProgress, (opId) =>
      this.request(workerSubjects.install(id), { ...request, ...opField(opId) }, this.timeouts.install, installReplySchema),
    );
    if (!reply.success) throw new WorkerFailure('other', reply.error || 'it said the install failed, and not why');
    return { address: reply.address };
  }

  /**
   * backend.upgrade, and LocalAI's fallback for a worker that does not subscribe to it (no responders):
   * backend.install with force. Both stream progress on the same per-operation subject. A reply that says the upgrade
   * failed is returned as it is: it still names the processes the worker stopped before it failed.
   */
  async upgrade(id: string, request: Omit<UpgradeRequest, 'op_id'>, onProgress?: (event: ProgressEvent) => void): Promise<UpgradeOutcome> {
    let via: UpgradeOutcome['via'] = 'upgrade';
    const reply = await this.withProgress(id, onProgress, async (opId) => {
      try {
        return await this.request(workerSubjects.upgrade(id), { ...request, ...opField(opId) }, this.timeouts.upgrade, upgradeReplySchema);
      } catch (error) {
        if (!(error instanceof WorkerFailure && error.reason === 'no-responders')) throw error;
        via = 'install';
        const install = await this.request(workerSubjects.install(id), { ...request, force: true, ...opField(opId) }, this.timeouts.upgrade, installReplySchema);
        return { success: install.success, error: install.error, stopped_process_keys: [], reports_stopped_processes: false };
      }
    });
    return { reply, via };
  }

  async delete(id: string, backend: string): Promise<UpgradeReply> {
    const reply = await this.request(workerSubjects.delete(id), { backend }, this.timeouts.delete, deleteReplySchema);
    if (!reply.success) throw new WorkerFailure('other', reply.error || 'it said the delete failed, and not why');
    return reply;
  }

  /** backend.stop is fire-and-forget: the worker frees and stops the processes `target` names (a model or a backend). */
  async stop(id: string, target: string): Promise<void> {
    this.nc.publish(workerSubjects.stop(id), JSON.stringify({ backend: target }));
    await this.nc.flush();
  }

  /** model.stop: frees and stops exactly one process; the reply comes once it has exited (or was not there). */
  async stopModel(id: string, request: ModelStopRequest): Promise<void> {
    const reply = await this.request(workerSubjects.modelStop(id), request, this.timeouts.modelStop, modelStopReplySchema);
    if (!reply.terminated) throw new WorkerFailure('other', reply.error || 'it did not stop the process, and did not say why');
  }

  /** model.unload: the backend's Free at `address`; the process keeps running. */
  async unload(id: string, model: string, address: string): Promise<void> {
    const reply = await this.request(workerSubjects.unload(id), { model_name: model, ...(address && { address }) }, this.timeouts.unload, unloadReplySchema);
    if (!reply.success) throw new WorkerFailure('other', reply.error || 'it said the unload failed, and not why');
  }

  /**
   * Subscribes to the operation's progress before the request goes out, so no early event is missed, and drops the
   * subscription once the reply is in: the last event comes just before the reply, on the same connection, and is
   * handed over first.
   */
  private async withProgress<T>(id: string, onProgress: ((event: ProgressEvent) => void) | undefined, send: (opId: string | null) => Promise<T>): Promise<T> {
    if (!onProgress) return send(null);
    const opId = randomUUID();
    const subscription: Subscription = this.nc.subscribe(workerSubjects.installProgress(id, opId), {
      callback: (error, msg) => {
        if (error || msg.data.length > PROGRESS_MAX_BYTES) return;
        const event = parseJson(msg.string(), progressEventSchema);
        // Progress is best effort, as in LocalAI: an event that is not one is dropped, the reply still decides.
        if (event && event.op_id === opId) onProgress(event);
      },
    });
    try {
      return await send(opId);
    } finally {
      subscription.unsubscribe();
    }
  }

  private async request<S extends z.ZodType>(subject: string, body: object, timeoutMs: number, schema: S): Promise<z.infer<S>> {
    let text: string;
    try {
      text = (await this.nc.request(subject, JSON.stringify(body), { timeout: timeoutMs })).string();
    } catch (error) {
      throw describeRequestError(error, timeoutMs);
    }
    const reply = parseJson(text, schema);
    if (reply === null) throw new WorkerFailure('malformed', `its reply on ${subject} is not LocalAI's`);
    return reply;
  }
}

function opField(opId: string | null): { op_id?: string } {
  return opId === null ? {} : { op_id: opId };
}

function parseJson<S extends z.ZodType>(text: string, schema: S): z.infer<S> | null {
  try {
    const parsed = schema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

function describeRequestError(error: unknown, timeoutMs: number): WorkerFailure {
  if (error instanceof errors.RequestError && error.isNoResponders()) {
    return new WorkerFailure('no-responders', 'it is not connected to NATS (no responders)');
  }
  if (error instanceof errors.TimeoutError || (error instanceof errors.RequestError && error.cause instanceof errors.TimeoutError)) {
    return new WorkerFailure('timeout', `it did not answer within ${Math.round(timeoutMs / 1000)} s`);
  }
  if (error instanceof errors.PermissionViolationError) return new WorkerFailure('refused', `the NATS server refused it: ${error.message}`);
  return new WorkerFailure('other', (error as Error).message.split('\n')[0] ?? 'unknown error');
}
