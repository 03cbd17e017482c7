import { z } from 'zod';
import { HangarError, type ErrorEnvelope } from '../../shared/index.ts';

const MESSAGE_MAX = 300;

/** One line, bounded: user-facing messages must never carry stacks or megabytes of echoed input. */
export function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > MESSAGE_MAX ? `${line.slice(0, MESSAGE_MAX - 1)}…` : line;
}

/** Maps anything a handler can throw onto the envelope the renderer sees. */
export function toErrorEnvelope(error: unknown): ErrorEnvelope {
  if (error instanceof HangarError) return { code: error.code, message: oneLine(error.message) };
  if (error instanceof z.ZodError) {
    const issue = error.issues[0];
    const path = issue && issue.path.length > 0 ? issue.path.map(String).join('.') : 'request';
    return { code: 'invalid-request', message: oneLine(`${path}: ${issue?.message ?? 'invalid request'}`) };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { code: 'failed', message: oneLine(message) || 'the request failed' };
}
