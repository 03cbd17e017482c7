// The schema of every event a node publishes to the cluster: a host takes an event heard from another node only
// when it parses here. Each view is typed against its DTO, so a field added to one without its schema fails to
// compile. Strings and lists are bounded well above anything a node sends, so a forged event cannot grow a viewer.
import * as z from 'zod';
import { nodeId, nodeSettings, restartPolicy, selectorText, versionText } from './schemas.ts';
import type {
  BackendView,
  DesiredVersion,
  ErrorCode,
  GpuView,
  NodeConvergence,
  NodeResources,
  RolloutView,
  GalleryEntryView,
  GalleryProblem,
  JobView,
  LogLine,
  MetaResolution,
  NodeCounts,
  NodeEvent,
  ProcessView,
  SettingsView,
} from './types.ts';

/** A log line's text is cut to this before it is sent to the cluster. */
export const LOG_TEXT_MAX = 64 * 1024;

const short = z.string().max(1024);
const path = z.string().max(4096);
const message = z.string().max(16 * 1024);
const count = z.number().int().min(0);
const nullableShort = short.nullable();

/** Times are kept between these (ms since 1970): a time outside has no date, and one record with it would fail a whole view. */
export const TIME_MIN_MS = Date.UTC(2000, 0, 1);
export const TIME_MAX_MS = Date.UTC(2200, 0, 1);
/** A time as an ISO string (what `Date#toISOString` writes), within the bounds above. */
const isoTime = z
  .string()
  .max(30)
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/)
  .refine((text) => {
    const ms = Date.parse(text);
    return ms >= TIME_MIN_MS && ms < TIME_MAX_MS;
  }, 'a time between 2000 and 2200');

export const nodeCountsSchema: z.ZodType<NodeCounts> = z.object({ backends: count, processes: count, stale: count, upgradable: count, drift: count });

const bytes = z.number().min(0).max(2 ** 60);
const gpuSchema: z.ZodType<GpuView> = z.object({
  vendor: z.enum(['nvidia', 'amd', 'intel']),
  index: count,
  model: short,
  vramTotalBytes: bytes.nullable(),
  vramUsedBytes: bytes.nullable(),
  utilization: z.number().min(0).max(100).nullable(),
});

export const nodeResourcesSchema: z.ZodType<NodeResources> = z.object({
  cpu: z.object({ count, load1: z.number().min(0).max(1e6) }),
  memory: z.object({ totalBytes: bytes, availableBytes: bytes }).nullable(),
  disk: z.object({ totalBytes: bytes, freeBytes: bytes }).nullable(),
  gpus: z.array(gpuSchema).max(64),
  gpuTools: z.array(short).max(8),
  gpuProblem: message.nullable(),
  at: short,
});

const rolloutStep = z.enum(['pending', 'upgrading', 'upgraded', 'unchanged', 'failed', 'skipped', 'rolled-back']);

/** A rollout record as a viewer reads it back from the cluster's store. */
export const rolloutSchema: z.ZodType<RolloutView> = z.object({
  id: z.string().regex(/^[A-Za-z0-9-]{1,64}$/),
  backend: short,
  version: versionText.nullable(),
  on: selectorText,
  maxParallel: z.number().int().min(1).max(1000),
  state: z.enum(['running', 'done', 'halted', 'rolling-back', 'rolled-back', 'interrupted']),
  startedAt: isoTime,
  finishedAt: isoTime.nullable(),
  coordinator: z.object({ id: nodeId, name: short }),
  interrupted: z.object({ while: z.enum(['running', 'rolling-back']), at: isoTime, reason: message }).nullable(),
  nodes: z.array(z.object({ id: nodeId, name: short, step: rolloutStep, reason: message.nullable(), from: nullableShort, to: nullableShort })).max(1000),
});

export const desiredVersionSchema: z.ZodType<DesiredVersion> = z.object({
  backend: short,
  version: versionText,
  on: selectorText,
  installMissing: z.boolean(),
  rollout: nullableShort,
  by: short,
  at: isoTime,
});

export const nodeConvergenceSchema: z.ZodType<NodeConvergence> = z.object({
  node: nodeId,
  backend: short,
  wanted: versionText,
  version: nullableShort,
  state: z.enum(['converged', 'converging', 'waiting', 'drifted', 'failed']),
  reason: message.nullable(),
  tries: count,
  at: isoTime,
  movedBy: z.object({ rollout: z.string().max(64), from: nullableShort }).optional(),
});

export const processSchema: z.ZodType<ProcessView> = z.object({
  model: short,
  backend: short,
  pid: count,
  port: count,
  dir: path,
  startedAt: short,
  state: z.enum(['starting', 'loading', 'ready', 'unresponsive', 'stale', 'stopping', 'exited', 'crashed', 'crash-looping']),
  cwd: z.enum(['ok', 'stale', 'unknown']),
  cwdReason: message,
  procCwd: path.nullable(),
  loaded: z.boolean(),
  policy: restartPolicy,
  restarts: count,
  restartDelayMs: count,
  maxRestarts: count,
  message: message.nullable(),
  error: message.nullable(),
  exit: z.object({ code: z.number().int().nullable(), signal: nullableShort, at: short, tail: z.array(message).max(1000) }).nullable(),
  cpu: z.number().nullable(),
  rss: z.number().nullable(),
  deadline: short.nullable().optional(),
  longestMs: count.nullable().optional(),
  runBy: z.literal('localai').optional(),
  localaiDown: message.nullable().optional(),
});

export const backendSchema: z.ZodType<BackendView> = z.object({
  name: short,
  kind: z.enum(['backend', 'alias', 'leftover', 'foreign', 'kept']),
  runs: nullableShort,
  localai: z.array(message).max(100),
  leftover: z.object({ of: short, suffix: short, restorable: z.boolean() }).nullable(),
  kept: z.object({ since: short, expiresAt: short, bytes: count }).nullable(),
  alias: nullableShort,
  version: nullableShort,
  digest: nullableShort,
  sha256: nullableShort,
  uri: path.nullable(),
  gallery: nullableShort,
  dir: path,
  installedAt: nullableShort,
  metaBackendFor: nullableShort,
  upgradable: z.boolean(),
  availableVersion: nullableShort,
  previous: z.object({ version: nullableShort, installedAt: nullableShort }).nullable(),
  broken: message.nullable(),
  processes: z.array(processSchema).max(10_000),
  upgradesUnknown: message.optional(),
});

export const jobSchema: z.ZodType<JobView> = z.object({
  id: short,
  node: nodeId,
  kind: z.enum(['install', 'upgrade', 'rollback', 'delete']),
  backend: short,
  state: z.enum(['queued', 'running', 'done', 'failed', 'cancelled']),
  phase: message,
  bytes: count,
  totalBytes: count.nullable(),
  error: message.nullable(),
  errorCode: z.enum(['invalid-request', 'forbidden', 'not-found', 'conflict', 'bad-input', 'failed'] satisfies ErrorCode[]).optional(),
  notice: message.nullable(),
  startedAt: short,
  finishedAt: nullableShort,
});

export const logLineSchema: z.ZodType<LogLine> = z.object({
  model: short,
  stream: z.enum(['stdout', 'stderr']),
  text: z.string().max(LOG_TEXT_MAX + 1),
  at: short,
});

export const galleryProblemSchema: z.ZodType<GalleryProblem> = z.object({ gallery: short, message });

const metaSchema: z.ZodType<MetaResolution> = z.object({
  resolves: nullableShort,
  capability: nullableShort,
  reason: message,
  picked: z.boolean(),
  variants: z.array(z.object({ capability: short, backend: short, compatible: z.boolean() })).max(1000),
  installedAs: nullableShort,
});

export const galleryEntrySchema: z.ZodType<GalleryEntryView> = z.object({
  name: short,
  gallery: short,
  alias: nullableShort,
  version: nullableShort,
  uri: path.nullable(),
  description: message.nullable(),
  license: nullableShort,
  tags: z.array(short).max(1000),
  icon: path.nullable(),
  installed: z.boolean(),
  upgradable: z.boolean(),
  compatible: z.boolean(),
  meta: metaSchema.nullable(),
});

export const settingsViewSchema: z.ZodType<SettingsView> = z.object({
  settings: nodeSettings,
  fixed: z.array(nodeSettings.keyof()).max(16),
});

/** Events a node publishes about itself. The others are a host's own and never come from the cluster. */
export type NodeOwnEvent = Exclude<NodeEvent, { type: 'member' } | { type: 'member-removed' } | { type: 'rollout' } | { type: 'desired' } | { type: 'cluster-status' }>;

export const nodeEventSchema: z.ZodType<NodeOwnEvent> = z.discriminatedUnion('type', [
  z.object({ type: z.literal('job'), node: nodeId, job: jobSchema }),
  z.object({ type: z.literal('backend'), node: nodeId, backend: backendSchema }),
  z.object({ type: z.literal('backend-removed'), node: nodeId, name: short }),
  z.object({ type: z.literal('process'), node: nodeId, process: processSchema }),
  z.object({ type: z.literal('process-removed'), node: nodeId, model: short }),
  z.object({ type: z.literal('log'), node: nodeId, line: logLineSchema }),
  z.object({ type: z.literal('gallery-changed'), node: nodeId, problems: z.array(galleryProblemSchema).max(1000) }),
  z.object({ type: z.literal('gallery-entries'), node: nodeId, entries: z.array(galleryEntrySchema).max(100_000) }),
  z.object({ type: z.literal('settings'), node: nodeId, settings: settingsViewSchema }),
]);
