// LocalAI's worker control protocol, as its frontend speaks it (core/services/messaging/subjects.go,
// backend_install_progress.go; core/services/nodes/unloader.go; pkg/model's process keys): core-NATS request/reply on subjects under the
// worker's node id, JSON bodies with LocalAI's field names, and the frontend's own time limits. Replies are
// validated here before anything reads them: a worker is another program on the network.
import * as z from 'zod';

/** LocalAI's rule for a subject token: NATS's separator, wildcards and whitespace become "-". */
export function sanitizeSubjectToken(token: string): string {
  return token.replace(/[.*> \t\n]/g, '-');
}

const node = (id: string) => `nodes.${sanitizeSubjectToken(id)}`;

export const workerSubjects = {
  install: (id: string) => `${node(id)}.backend.install`,
  upgrade: (id: string) => `${node(id)}.backend.upgrade`,
  installProgress: (id: string, opId: string) => `${node(id)}.backend.install.${sanitizeSubjectToken(opId)}.progress`,
  list: (id: string) => `${node(id)}.backend.list`,
  delete: (id: string) => `${node(id)}.backend.delete`,
  /** Fire-and-forget: no reply. */
  stop: (id: string) => `${node(id)}.backend.stop`,
  /** One process, by its key; the reply comes once it has exited. */
  modelStop: (id: string) => `${node(id)}.model.stop`,
  running: (id: string) => `${node(id)}.models.running`,
  unload: (id: string) => `${node(id)}.model.unload`,
};

/** The frontend's deadlines (DistributedConfig defaults and unloader.go). */
export const WORKER_TIMEOUTS_MS = {
  install: 15 * 60_000,
  upgrade: 15 * 60_000,
  list: 30_000,
  running: 10_000,
  delete: 2 * 60_000,
  unload: 30_000,
  modelStop: 10_000,
};

/** The body of `backend.install` (BackendInstallRequest); LocalAI omits empty fields. */
export interface InstallRequest {
  backend: string;
  model_id?: string;
  /** The galleries as a JSON string of `[{"url","name"}]`, exactly as the frontend marshals its own. */
  backend_galleries?: string;
  replica_index?: number;
  /** Only the fallback for a worker with no upgrade handler sets it. */
  force?: boolean;
  op_id?: string;
}

/** The body of `backend.upgrade` (BackendUpgradeRequest). */
export interface UpgradeRequest {
  backend: string;
  backend_galleries?: string;
  op_id?: string;
}

const text = z.string().max(64 * 1024);
const name = z.string().max(1024);
/** Go's encoding/json leaves out an empty omitempty field; a missing string reads as "". */
const optionalText = text.optional().transform((v) => v ?? '');

/** A reply LocalAI could not marshal is `{"error":"internal marshal error"}`: every flag false, no list. */
const flag = z.boolean().optional().transform((v) => v === true);

export const installReplySchema = z.object({ success: flag, address: optionalText, error: optionalText });
export const upgradeReplySchema = z.object({
  success: flag,
  error: optionalText,
  stopped_process_keys: z.array(name).max(10_000).nullable().optional().transform((v) => v ?? []),
  reports_stopped_processes: z.boolean().optional().transform((v) => v ?? false),
});
export const deleteReplySchema = upgradeReplySchema;
export const unloadReplySchema = z.object({ success: flag, error: optionalText });

/** The body of `model.stop` (ModelStopRequest): the process by its key, and the address it must still have. */
export interface ModelStopRequest {
  model_name: string;
  process_key: string;
  expected_address: string;
}

/** ModelStopReply: `terminated` also for a key the worker does not run; an `error` beside it is a failed Free. */
export const modelStopReplySchema = z.object({
  matched: flag,
  freed: flag,
  terminated: flag,
  process_key: optionalText,
  address: optionalText,
  error: optionalText,
});

const backendInfo = z.object({
  name,
  is_system: z.boolean(),
  is_meta: z.boolean(),
  installed_at: optionalText,
  gallery_url: optionalText,
  version: optionalText,
  uri: optionalText,
  digest: optionalText,
});
export type WorkerBackend = z.infer<typeof backendInfo>;

/** An empty list comes as `{"backends":null}` (a nil Go slice). */
export const listReplySchema = z.object({
  backends: z.array(backendInfo).max(100_000).nullish().transform((v) => v ?? []),
  error: optionalText,
});

const runningModel = z.object({ model_id: name, replica_index: z.number().int().min(0), address: optionalText });
export type RunningModel = z.infer<typeof runningModel>;

/** An empty list comes as `{"models":[]}`. */
export const runningReplySchema = z.object({ models: z.array(runningModel).max(100_000).nullish().transform((v) => v ?? []), error: optionalText });

/** BackendInstallProgressEvent: transient, best effort; the reply is the truth. */
export const progressEventSchema = z.object({
  op_id: name,
  node_id: name,
  backend: name,
  file_name: optionalText,
  /** Human-readable, as LocalAI formats bytes: "412 B", "1.5 GiB". */
  current: optionalText,
  total: optionalText,
  percentage: z.number(),
  phase: optionalText,
});
export type ProgressEvent = z.infer<typeof progressEventSchema>;

/** The key the worker keeps a model's replica under (BackendProcessKey). */
export function processKey(model: string, replica: number): string {
  return `${model}#${replica}`;
}

/** A process key the worker reports: `modelID#replica`, split on the last "#". */
export function parseProcessKey(key: string): { model: string; replica: number } | null {
  const hash = key.lastIndexOf('#');
  if (hash < 0 || !/^\d+$/.test(key.slice(hash + 1))) return null;
  return { model: key.slice(0, hash), replica: Number(key.slice(hash + 1)) };
}

const UNITS = 'KMGTPE';

/** Bytes from LocalAI's human-readable size ("412 B", "1.5 GiB"); null for anything else. */
export function parseLocalAiSize(size: string): number | null {
  const match = /^(\d+(?:\.\d+)?) (B|([KMGTPE])iB)$/.exec(size.trim());
  if (!match) return null;
  const exponent = match[3] ? UNITS.indexOf(match[3]) + 1 : 0;
  return Math.round(Number(match[1]) * 1024 ** exponent);
}

/** LocalAI's size text, for the stand-in worker and for tests: whole bytes below 1 KiB, else one decimal. */
export function formatLocalAiSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  let div = 1024;
  let exponent = 0;
  for (let n = Math.floor(bytes / 1024); n >= 1024; n = Math.floor(n / 1024)) {
    div *= 1024;
    exponent++;
  }
  return `${(bytes / div).toFixed(1)} ${UNITS[exponent]}iB`;
}
