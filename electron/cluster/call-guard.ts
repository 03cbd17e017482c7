// The first line of a node's defence: it acts on a call only when a viewer it trusts signed it, for this node and
// this reply subject, within a minute of the node's clock, and never twice. NATS permissions are the second line.
import type { Msg } from '@nats-io/transport-node';
import { check } from './signed.ts';
import type { TrustList } from './trust.ts';

/** How far a call's clock may be from the node's. */
export const CALL_WINDOW_MS = 60_000;
/** Nonces are kept for the window; past this many at once, calls wait for old ones to expire. */
const NONCES_KEPT = 200_000;

export type Admission = { ok: true; caller: string } | { ok: false; reason: string; message: string };

export interface CallGuardOptions {
  id: string;
  name: string;
  trust: TrustList;
  /** --insecure-any-caller: every call is acted on, signed or not. */
  anyCaller: boolean;
}

export class CallGuard {
  private readonly nonces = new Map<string, number>();

  constructor(private readonly options: CallGuardOptions) {}

  async admit(msg: Msg): Promise<Admission> {
    if (this.options.anyCaller) return { ok: true, caller: 'any caller (--insecure-any-caller)' };
    const checked = check(msg, 'call', this.options.id);
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
    if (!nonce || nonce.length < 16) return this.refuse('no nonce', 'the call carries no nonce');
    this.forgetExpired();
    if (this.nonces.has(nonce)) return this.refuse('replayed', 'this call was already answered (a replay)');
    if (this.nonces.size >= NONCES_KEPT) return this.refuse('busy', 'too many calls in the last minute; try again');
    this.nonces.set(nonce, at + CALL_WINDOW_MS);
    return { ok: true, caller: checked.key.id };
  }

  private refuse(reason: string, message: string): Admission {
    return { ok: false, reason, message };
  }

  /** Nonces go in time order, so the expired ones are at the front. */
  private forgetExpired(): void {
    const now = Date.now();
    for (const [nonce, expires] of this.nonces) {
      if (expires > now) break;
      this.nonces.delete(nonce);
    }
  }
}
