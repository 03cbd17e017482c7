// The first line of a node's defence: it acts on a call only when a viewer it trusts signed it, for this node and
// this reply subject, within a minute of the node's clock, and never twice (its nonces kept on disk, so not after a
// restart either). Calls from keys it does not trust are few in an honest cluster: past a small rate they are
// dropped unanswered before any signature is checked. NATS permissions are the second line.
import type { Msg } from '@nats-io/transport-node';
import { join } from 'node:path';
import { NONCE, NonceLog } from './nonce-log.ts';
import { check, signingKey } from './signed.ts';
import type { TrustList } from './trust.ts';
import { messageOf } from '../../shared/error-text.ts';

/** How far a call's clock may be from the node's. */
export const CALL_WINDOW_MS = 60_000;
/** Nonces are kept for the window; past this many at once, calls wait for old ones to expire. */
const NONCES_KEPT = 200_000;
/** Calls from keys the node does not trust: so many a second on average, in bursts of at most so many. */
const STRANGER_RATE_PER_S = 20;
const STRANGER_BURST = 40;

/** `failed`: the node would act on the call but cannot (its own trouble, not the caller's); otherwise it is refused. */
export type Admission = { ok: true; caller: string } | { ok: false; reason: string; message: string; unanswered?: true; failed?: true };

export interface CallGuardOptions {
  id: string;
  name: string;
  trust: TrustList;
  /** --insecure-any-caller: every call is acted on, signed or not. */
  anyCaller: boolean;
  stateDir: string;
  /** The cluster calls are signed for. */
  cluster: string;
}

export class CallGuard {
  private readonly nonces: NonceLog;
  private tokens = STRANGER_BURST;
  private filled = Date.now();

  constructor(private readonly options: CallGuardOptions) {
    this.nonces = new NonceLog(join(options.stateDir, 'call-nonces'));
  }

  open(): Promise<void> {
    return this.nonces.open();
  }

  close(): Promise<void> {
    return this.nonces.close();
  }

  async admit(msg: Msg): Promise<Admission> {
    if (this.options.anyCaller) return { ok: true, caller: 'any caller (--insecure-any-caller)' };
    if (!this.options.trust.hasText(signingKey(msg)) && !this.takeStrangerToken()) {
      return { ok: false, reason: 'untrusted callers over their rate', message: '', unanswered: true };
    }
    const checked = check(msg, 'call', this.options.id, this.options.cluster);
    if (!checked.ok) {
      return checked.reason === 'unsigned'
        ? this.refuse('unsigned', `node ${this.options.name} acts only on calls signed by a viewer it trusts`)
        : this.refuse(checked.reason, `the call's signature does not check (${checked.reason})`);
    }
    if (!(await this.options.trust.holds(checked.key))) {
      return this.refuse('not trusted', `not trusted by node ${this.options.name}: run \`hangar cluster trust ${checked.key.text}\` there`);
    }
    const at = Number(checked.stamp.at);
    if (!Number.isSafeInteger(at)) return this.refuse('no time', 'the call carries no time');
    const skew = at - Date.now();
    if (Math.abs(skew) > CALL_WINDOW_MS) {
      const off = `${Math.round(Math.abs(skew) / 1000)} s ${skew > 0 ? 'ahead of' : 'behind'}`;
      return this.refuse('clock', `the caller's clock is ${off} this node's clock (at most ${CALL_WINDOW_MS / 1000} s allowed)`);
    }
    const nonce = checked.stamp.nonce;
    if (!nonce || !NONCE.test(nonce)) return this.refuse('no nonce', 'the call carries no nonce');
    if (this.nonces.has(nonce)) return this.refuse('replayed', 'this call was already answered (a replay)');
    if (this.nonces.size >= NONCES_KEPT) return this.refuse('busy', 'too many calls in the last minute; try again');
    try {
      await this.nonces.add(nonce, at + CALL_WINDOW_MS);
    } catch (error) {
      // Not acted on: without its nonce kept, the call could be played again after a restart. Said, not kept silent.
      const code = (error as NodeJS.ErrnoException).code;
      const why = code === 'ENOSPC' ? 'disk full' : (code ?? (messageOf(error)));
      return { ok: false, reason: 'state not written', message: `this node cannot write its state (${why})`, failed: true };
    }
    return { ok: true, caller: checked.key.id };
  }

  private refuse(reason: string, message: string): Admission {
    return { ok: false, reason, message };
  }

  /** A token bucket shared by every key the node does not trust. */
  private takeStrangerToken(): boolean {
    const now = Date.now();
    this.tokens = Math.min(STRANGER_BURST, this.tokens + ((now - this.filled) / 1000) * STRANGER_RATE_PER_S);
    this.filled = now;
    if (this.tokens < 1) return false;
    this.tokens--;
    return true;
  }
}
