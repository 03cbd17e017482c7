// LocalAI is ready when GET /readyz answers 200 (core/http/routes/health.go; it needs no key). A process that ends
// first, or a wait that runs out, is a failed start; a wait cancelled by `signal` ends at once.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Ended } from './launch.ts';

const POLL_MS = 20;
const PROBE_TIMEOUT_MS = 2000;

export type Readiness = { ready: true } | { ready: false; why: string };

export async function waitReady(url: string, ended: Promise<Ended>, timeoutMs: number, signal: AbortSignal): Promise<Readiness> {
  let exit: Ended | null = null;
  void ended.then((e) => (exit = e));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (signal.aborted) return { ready: false, why: 'cancelled' };
    if (exit) return { ready: false, why: `LocalAI exited before it was ready (${endText(exit)})` };
    if (await answers(url, signal)) return { ready: true };
    if (Date.now() > deadline) return { ready: false, why: `LocalAI did not answer ${url}/readyz within ${Math.round(timeoutMs / 1000)} s` };
    await sleep(POLL_MS);
  }
}

export function endText(ended: Ended): string {
  return ended.signal ? `killed by ${ended.signal}` : `exit code ${ended.code}`;
}

/** A probe in flight when the wait is cancelled ends with it, rather than up to its own timeout later. */
async function answers(url: string, signal: AbortSignal): Promise<boolean> {
  try {
    const response = await fetch(`${url}/readyz`, { signal: AbortSignal.any([signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)]) });
    await response.body?.cancel();
    return response.status === 200;
  } catch {
    return false;
  }
}
