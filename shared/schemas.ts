import { z } from 'zod';
import type { NodeApi, NodeMethod, NodeRequest } from './api.ts';
import { MODEL_NAME_PATTERN, MODEL_NAME_RULE, NAME_MAX } from './names.ts';

/**
 * Suffixes of the working directories an install leaves beside a live backend: LocalAI's install and upgrade
 * (`.install-tmp`, `.install-backup`, `.upgrade-tmp`, `.backup`) and Hangar 0.1 (`.previous`).
 */
export const WORKING_SUFFIXES = ['.install-tmp', '.install-backup', '.upgrade-tmp', '.backup', '.previous'] as const;

export { NAME_MAX, MODEL_NAME_RULE } from './names.ts';

export const backendName = z
  .string()
  .min(1, 'name is empty')
  .max(NAME_MAX, `name is longer than ${NAME_MAX} characters`)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._+-]*$/, 'name may hold only letters, digits, ".", "_", "+" and "-", and must start with a letter or digit')
  .refine((n) => !WORKING_SUFFIXES.some((s) => n.endsWith(s)), 'name ends in a reserved working-directory suffix');

/** `name` or `gallery@name`. */
export const qualifiedName = z
  .string()
  .max(2 * NAME_MAX + 1)
  .superRefine((value, ctx) => {
    const at = value.indexOf('@');
    const parts = at < 0 ? [value] : [value.slice(0, at), value.slice(at + 1)];
    for (const part of parts) {
      const r = backendName.safeParse(part);
      if (!r.success) ctx.addIssue({ code: 'custom', message: r.error.issues[0]?.message ?? 'bad name' });
    }
  });

export const modelName = z
  .string()
  .min(1, 'Type a model name')
  .max(NAME_MAX, MODEL_NAME_RULE)
  .regex(MODEL_NAME_PATTERN, MODEL_NAME_RULE);

const capabilityKey = z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'capability may hold only lower-case letters, digits and "-"');

const nodeId = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'bad node id');
const jobId = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, 'bad job id');

const nodeRef = z.strictObject({ node: nodeId });
const backendRef = z.strictObject({ node: nodeId, name: qualifiedName });
const modelRef = z.strictObject({ node: nodeId, model: modelName });

type Schemas = { [M in NodeMethod]: z.ZodType<NodeRequest<M>> };

/** The request schema of every NodeApi method. Transports derive their channels from this map. */
export const requestSchemas = {
  info: nodeRef,
  gallery: z.strictObject({ node: nodeId, refresh: z.boolean().optional() }),
  backends: nodeRef,
  processes: nodeRef,
  jobs: nodeRef,
  install: z.strictObject({ node: nodeId, name: qualifiedName, force: z.boolean().optional() }),
  upgrade: backendRef,
  upgradeAll: nodeRef,
  rollback: backendRef,
  chooseVariant: z.strictObject({ node: nodeId, name: qualifiedName, capability: capabilityKey.nullable() }),
  delete: backendRef,
  waitJob: z.strictObject({ node: nodeId, id: jobId }),
  cancelJob: z.strictObject({ node: nodeId, id: jobId }),
  load: z.strictObject({ node: nodeId, backend: qualifiedName, model: modelName }),
  respawn: modelRef,
  respawnBackend: backendRef,
  stop: modelRef,
  scan: nodeRef,
  logs: modelRef,
} satisfies Schemas;

export function isNodeMethod(value: unknown): value is NodeMethod {
  return typeof value === 'string' && Object.hasOwn(requestSchemas, value);
}

/** Parses a request for `method`, throwing a ZodError with a readable first issue. */
export function parseRequest<M extends NodeMethod>(method: M, payload: unknown): NodeRequest<M> {
  return (requestSchemas[method] as z.ZodType<NodeRequest<M>>).parse(payload);
}

export type { NodeApi };
export { nodeMethods } from './api.ts';
