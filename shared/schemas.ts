import * as z from 'zod';
import type { HangarMethod, LeftoverAction, NodeApi, NodeRequest } from './api.ts';
import type { ErrorCode, InvitedRole, LocalAiAction } from './types.ts';
import { backendNameProblem, MACHINE_NAME_PATTERN, modelNameProblem, NAME_CHARACTERS, NAME_CHARACTERS_RULE, NAME_MAX, VERSION_MAX } from './names.ts';
import { isSelector, LABEL_KEY, LABEL_RULE, LABEL_VALUE, LABELS_MAX } from './selector.ts';
import type { RestartPolicy } from './types.ts';

export { NAME_MAX, MODEL_NAME_RULE, WORKING_SUFFIXES } from './names.ts';

/**
 * A name as people type it: text whose `problem` is not null is bad input (README, "Exit codes": 6), not a malformed
 * request (2), and is answered with the problem. What is not text at all is still malformed.
 */
function typedName(problem: (name: string) => string | null) {
  return z.string().superRefine((value, ctx) => {
    const found = problem(value);
    if (found !== null) ctx.addIssue({ code: 'custom', message: found, params: { code: 'bad-input' satisfies ErrorCode } });
  });
}

export const backendName = typedName(backendNameProblem);

/** A directory beside the backends, to be a working directory of one (`<backend>.install-tmp`…): the node says if it is. */
export const leftoverName = typedName((name) =>
  name.length > NAME_MAX + 16 ? `name is longer than ${NAME_MAX + 16} characters` : NAME_CHARACTERS.test(name) ? null : NAME_CHARACTERS_RULE,
);

/** `name` or `gallery@name`. */
export const qualifiedName = typedName((value) => {
  const at = value.indexOf('@');
  const parts = at < 0 ? [value] : [value.slice(0, at), value.slice(at + 1)];
  return parts.map(backendNameProblem).find((problem) => problem !== null) ?? null;
});

export const modelName = typedName(modelNameProblem);

export const restartPolicy = z.enum(['never', 'on-failure', 'always'] satisfies RestartPolicy[]);

const capabilityKey = z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'capability may hold only lower-case letters, digits and "-"');

export const nodeId = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'bad node id');
const jobId = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, 'bad job id');

const nodeRef = z.strictObject({ node: nodeId });
const backendRef = z.strictObject({ node: nodeId, name: qualifiedName });
const modelRef = z.strictObject({ node: nodeId, model: modelName });
const stopUnsupervised = z.boolean().optional();
const swapRef = z.strictObject({ node: nodeId, name: qualifiedName, stopUnsupervised });
const smokeStart = z.boolean().optional();
const gatedSwapRef = z.strictObject({ node: nodeId, name: qualifiedName, stopUnsupervised, smokeStart });
/** Linux's pid_max is at most 2^22. */
const pid = z.number().int('pid must be an integer').min(2, 'pid must be 2 or more').max(2 ** 22, 'pid is out of range');

const port = z.number().int('Ports are whole numbers').min(1024, 'Ports go from 1024 to 65535').max(65535, 'Ports go from 1024 to 65535');
export const GALLERIES_MAX = 32;
export const STARTER_LOCATION = 'starter';

const gallerySetting = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'Gallery names can use letters, digits, ".", "_", "-"; at most 64 characters'),
  location: z
    .string()
    .max(2048)
    .refine(
      (v) => v === STARTER_LOCATION || v.startsWith('/') || /^(https?|file):\/\/\S+$/i.test(v),
      'A gallery is the starter gallery, an absolute path, or an http(s):// or file:// URL',
    ),
  enabled: z.boolean(),
});

export const nodeLabels = z
  .record(z.string().regex(LABEL_KEY, LABEL_RULE), z.string().regex(LABEL_VALUE, LABEL_RULE))
  .refine((labels) => Object.keys(labels).length <= LABELS_MAX, `At most ${LABELS_MAX} labels`);

/** A backend's version as galleries write it: "2.0.0", "v1.4-cuda12", "master-abc123". */
export const versionText = z
  .string()
  .regex(new RegExp(`^[A-Za-z0-9][A-Za-z0-9._+:~-]{0,${VERSION_MAX - 1}}$`), 'a version holds letters, digits and ".", "_", "+", ":", "~", "-"');
export const selectorText = z.string().max(8192).refine(isSelector, 'nodes are selected by all, label:KEY=VALUE or nodes:ID,ID');

const startSeconds = z.number().int('Seconds are whole numbers').min(10, 'A start may take 10 s to a day').max(86_400, 'A start may take 10 s to a day');
const BACKEND_LIMITS_MAX = 256;

/** Every field of NodeSettings, checked as strictly as a request: the settings file is read with it too. */
export const nodeSettings = z.strictObject({
  galleries: z
    .array(gallerySetting)
    .max(GALLERIES_MAX)
    .refine((list) => new Set(list.map((g) => g.name)).size === list.length, 'Each gallery needs a name of its own'),
  autoUpgrade: z.boolean(),
  autoUpgradeHours: z.number().int('Hours are whole numbers').min(1, 'Check for upgrades every 1 to 168 hours').max(168, 'Check for upgrades every 1 to 168 hours'),
  // A reversed range is said as such first: "20-10" is a typo of order before it is one of size.
  portRange: z
    .tuple([z.number(), z.number()])
    .refine(([from, to]) => from <= to, 'The port range is reversed: its first port must not be above its last')
    .pipe(z.tuple([port, port])),
  keepBackendsRunning: z.boolean(),
  startBackendsOnLaunch: z.boolean(),
  labels: nodeLabels,
  cordoned: z.boolean(),
  smokeStart: z.boolean(),
  localaiRespawn: z.boolean(),
  localaiAutostart: z.boolean(),
  startTimeoutSec: startSeconds,
  backendStartTimeoutSec: z
    .record(backendName, startSeconds)
    .refine((limits) => Object.keys(limits).length <= BACKEND_LIMITS_MAX, `At most ${BACKEND_LIMITS_MAX} backends have a start timeout of their own`),
});

const text = z.string().max(1024);
/** NatsCredentials' fields, for every schema that carries a NATS login. */
export const natsCredentialFields = {
  user: text.optional(),
  password: text.optional(),
  token: text.optional(),
  credsFile: text.optional(),
  caFile: text.optional(),
  insecure: z.boolean().optional(),
};
const clusterJoin = z.strictObject({
  url: z.string().regex(/^(nats|tls):\/\/[^\s/]+$/i, 'A cluster address looks like nats://HOST:4222 or tls://HOST:4222'),
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'Node names can use letters, digits, ".", "_", "-"; at most 64 characters').optional(),
  ...natsCredentialFields,
});

/** LocalAI's cluster as a host joins it: checked when it is set, and again when it is read back from the host's state. */
export const localaiJoin = z.strictObject({
  frontend: z.string().max(2048).regex(/^https?:\/\/\S+$/i, 'A LocalAI frontend address looks like http://HOST:8080'),
  apiKey: text.optional(),
  nats: z.string().regex(/^(nats|tls):\/\/[^\s/]+$/i, "LocalAI's NATS address looks like nats://HOST:4222 or tls://HOST:4222"),
  natsUser: text.optional(),
  natsPassword: text.optional(),
  natsToken: text.optional(),
  natsCredsFile: text.optional(),
  natsCaFile: text.optional(),
  insecure: z.boolean().optional(),
});

const localaiServer = z.strictObject({
  url: z.string().max(2048).regex(/^https?:\/\/\S+$/i, 'A LocalAI server address looks like http://HOST:8080'),
  apiKey: text.optional(),
  insecure: z.boolean().optional(),
});

/** How many of LocalAI's log lines a host keeps and shows. */
export const LOCALAI_LOG_LINES = 2000;

/** A LocalAI release tag as its releases page names it: v2.29.0 (the v may be left out). */
/** vX.Y.Z (or X.Y.Z), or latest; a refusal names what was typed. */
const localaiVersion = z.string().superRefine((value, ctx) => {
  if (value !== 'latest' && !/^v?\d{1,4}\.\d{1,4}\.\d{1,4}$/.test(value)) ctx.addIssue({ code: 'custom', message: `version must look like v3.1.0 or be latest, got ${JSON.stringify(value.slice(0, 100))}` });
});

type Schemas = { [M in HangarMethod]: z.ZodType<NodeRequest<M>> };

/** Rollouts run one node at a time by default; more at once only as far as a small cluster needs. */
export const MAX_PARALLEL = 20;

/** The request schema of every NodeApi method. Transports derive their channels from this map. */
export const requestSchemas = {
  info: nodeRef,
  gallery: z.strictObject({ node: nodeId, refresh: z.boolean().optional() }),
  backends: nodeRef,
  processes: nodeRef,
  jobs: nodeRef,
  install: z.strictObject({ node: nodeId, name: qualifiedName, force: z.boolean().optional(), stopUnsupervised, smokeStart }),
  upgrade: gatedSwapRef,
  upgradeAll: nodeRef,
  rollback: gatedSwapRef,
  chooseVariant: z.strictObject({ node: nodeId, name: qualifiedName, capability: capabilityKey.nullable() }),
  delete: swapRef,
  resolveLeftover: z.strictObject({ node: nodeId, name: leftoverName, action: z.enum(['delete', 'restore'] satisfies LeftoverAction[]) }),
  waitJob: z.strictObject({ node: nodeId, id: jobId }),
  cancelJob: z.strictObject({ node: nodeId, id: jobId }),
  load: z.strictObject({
    node: nodeId,
    backend: qualifiedName,
    model: modelName,
    restart: restartPolicy.optional(),
    restartDelayMs: z.number().int().min(0).max(3_600_000).optional(),
    maxRestarts: z.number().int().min(1).max(10_000).optional(),
    startTimeoutMs: z.number().int().min(1000, 'A start may take at least a second').max(86_400_000, 'A start may take at most a day').optional(),
  }),
  respawn: modelRef,
  respawnBackend: backendRef,
  restart: modelRef,
  stop: modelRef,
  unload: modelRef,
  stopProcess: z.strictObject({ node: nodeId, pid }),
  scan: nodeRef,
  logs: modelRef,
  settings: nodeRef,
  updateSettings: z.strictObject({ node: nodeId, settings: nodeSettings.partial(), force: z.boolean().optional() }),
  installVersion: z.strictObject({ node: nodeId, name: qualifiedName, version: versionText, stopUnsupervised, smokeStart }),
  resources: nodeRef,
  drain: nodeRef,
  nodes: nodeRef,
  rollout: z.strictObject({
    node: nodeId,
    name: backendName,
    maxParallel: z.number().int().min(1).max(MAX_PARALLEL).optional(),
    on: selectorText.optional(),
    version: versionText.optional(),
  }),
  rollouts: nodeRef,
  rollbackRollout: z.strictObject({ node: nodeId, id: jobId }),
  resumeRollout: z.strictObject({ node: nodeId, id: jobId }),
  pin: z.strictObject({ node: nodeId, name: backendName, version: versionText, on: selectorText }),
  unpin: z.strictObject({ node: nodeId, name: backendName }),
  desired: nodeRef,
  clusterSettings: nodeRef,
  updateClusterSettings: z.strictObject({ node: nodeId, cluster: clusterJoin.nullable() }),
  clusterStatus: nodeRef,
  clusterInvitations: nodeRef,
  clusterInvite: z.strictObject({
    node: nodeId,
    role: z.enum(['node', 'viewer', 'node+viewer'] satisfies InvitedRole[]),
    name: z.string().regex(MACHINE_NAME_PATTERN, 'A machine\'s name is letters, digits, "_" and "-", at most 64').optional(),
    labels: nodeLabels,
    expiresMinutes: z.number().int('Minutes are whole numbers').min(1, 'An invitation lasts a minute to seven days').max(7 * 24 * 60, 'An invitation lasts a minute to seven days'),
  }),
  // The invitation is a secret: a refusal never repeats it.
  clusterJoin: z.strictObject({
    node: nodeId,
    token: z
      .string()
      .trim()
      .max(16 * 1024, 'This is too long to be an invitation')
      .regex(/^hjoin1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, 'This is not an invitation: hangar cluster invite prints one, starting with hjoin1.'),
  }),
  localaiSettings: nodeRef,
  updateLocalaiSettings: z.strictObject({ node: nodeId, localai: localaiJoin.nullable() }),
  localaiServer: nodeRef,
  updateLocalaiServer: z.strictObject({ node: nodeId, server: localaiServer.nullable() }),
  localaiRun: nodeRef,
  localaiControl: z.strictObject({ node: nodeId, action: z.enum(['start', 'stop', 'restart'] satisfies LocalAiAction[]) }),
  localaiInstall: z.strictObject({ node: nodeId, version: localaiVersion.optional(), as: z.enum(['install', 'upgrade']).optional() }),
  localaiRollback: nodeRef,
  localaiCancel: nodeRef,
  localaiLogs: z.strictObject({ node: nodeId, lines: z.number().int().min(1).max(LOCALAI_LOG_LINES).optional() }),
  localaiLatest: nodeRef,
} satisfies Schemas;

export function isHangarMethod(value: unknown): value is HangarMethod {
  return typeof value === 'string' && Object.hasOwn(requestSchemas, value);
}

/** Parses a request for `method`, throwing a ZodError with a readable first issue. */
export function parseRequest<M extends HangarMethod>(method: M, payload: unknown): NodeRequest<M> {
  return (requestSchemas[method] as z.ZodType<NodeRequest<M>>).parse(payload);
}

export type { NodeApi };
export { hangarMethods, nodeMethods } from './api.ts';
