import { ZodError } from 'zod';
import { hangarMethods, type HangarApi, type HangarMethod, type NodeApi, type NodeMethod } from '../../shared/api.ts';
import { HangarError } from '../../shared/errors.ts';
import { parseRequest } from '../../shared/schemas.ts';
import type { ErrorEnvelope } from '../../shared/types.ts';
import { oneLine } from '../../shared/error-text.ts';
import { hidePasswords } from '../../shared/url-password.ts';
import { issueEnvelope } from './request-issue.ts';

export type Envelope = { ok: true; value: unknown } | { ok: false; error: ErrorEnvelope };

/**
 * The one entry point every transport uses: checks the method name, validates the payload against its schema,
 * calls the target, and turns any failure into an envelope without a stack. A host serves every method; a node
 * serving the cluster passes its own, shorter list.
 */
export function invokeNode(node: HangarApi, method: unknown, payload: unknown): Promise<Envelope>;
export function invokeNode(node: NodeApi, method: unknown, payload: unknown, methods: readonly NodeMethod[]): Promise<Envelope>;
export async function invokeNode(
  node: NodeApi | HangarApi,
  method: unknown,
  payload: unknown,
  methods: readonly HangarMethod[] = hangarMethods,
): Promise<Envelope> {
  if (typeof method !== 'string' || !methods.includes(method as HangarMethod)) {
    return { ok: false, error: { code: 'invalid-request', message: `unknown method ${describe(method)}` } };
  }
  try {
    const request = parseRequest(method as HangarMethod, payload);
    const call = (node as HangarApi)[method as HangarMethod] as (req: unknown) => Promise<unknown>;
    const value = await call.call(node, request);
    return { ok: true, value: value ?? null };
  } catch (error) {
    return { ok: false, error: toErrorEnvelope(error) };
  }
}

const MESSAGE_MAX = 300;

export function toErrorEnvelope(error: unknown): ErrorEnvelope {
  if (error instanceof HangarError) return { code: error.code, message: shortLine(error.message) };
  if (error instanceof ZodError) {
    const { code, message } = issueEnvelope(error.issues[0]);
    return { code, message: shortLine(message) };
  }
  return { code: 'failed', message: shortLine(oneLine(error)) };
}

/**
 * Validation messages can echo caller input (a 100 kB key, a key holding a newline): the caller gets one short line.
 * A URL in it (a gallery's, an archive's) has its password hidden.
 */
function shortLine(message: string): string {
  const line = hidePasswords(message).replace(/\s+/g, ' ').trim();
  return line.length > MESSAGE_MAX ? `${line.slice(0, MESSAGE_MAX - 1)}…` : line;
}

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value.slice(0, 64)) : typeof value;
}

