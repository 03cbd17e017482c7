// What a host's cluster link dropped, refused, could not send, or was refused by the NATS server: counted by reason
// for `hangar cluster status` and `hangar nodes`, and said once on stderr per reason so a flood fills no log.
import { EventEmitter } from 'node:events';
import type { Msg, MsgCallback } from '@nats-io/transport-node';
import type { ClusterStatusView, ClusterViolation } from '../../shared/types.ts';
import { violationLine, ViolationWords } from './violation-words.ts';

export type Heard = 'cards' | 'events' | 'replies' | 'records';

const VIOLATIONS_KEPT = 20;
/** Reasons are fixed words; should a new one carry text from outside, the counts still cannot grow without end. */
const REASONS_KEPT = 40;

export class ClusterHealth extends EventEmitter<{ violation: [string] }> {
  private readonly dropped: ClusterStatusView['dropped'] = { cards: {}, events: {}, replies: {}, records: {} };
  private readonly refused: Record<string, number> = {};
  private readonly unsent: Record<string, number> = {};
  private readonly violations = new Map<string, ClusterViolation>();

  constructor(
    private readonly log: (line: string) => void = (line) => process.stderr.write(`hangar: cluster: ${line}\n`),
    private readonly words = new ViolationWords(null),
  ) {
    super();
  }

  /** A card, event or reply heard from the cluster and not taken. */
  drop(what: Heard, reason: string, subject: string): void {
    this.count(this.dropped[what], reason, () => `dropped ${what.slice(0, -1)} on ${subject.slice(0, 120)}: ${reason} (more are counted: hangar cluster status)`);
  }

  /** A call this node would not act on. */
  refuse(reason: string): void {
    this.count(this.refused, reason, () => `refused a call: ${reason} (more are counted: hangar cluster status)`);
  }

  /** Something this node could not send. */
  unsend(reason: string): void {
    this.count(this.unsent, reason, () => `could not send: ${reason}`);
  }

  /** The server refused this host something (a permission violation, reported after the fact). */
  violation(message: string): void {
    const line = violationLine(message);
    const known = this.violations.get(line);
    this.violations.delete(line);
    this.violations.set(line, { message: line, count: (known?.count ?? 0) + 1, last: new Date().toISOString() });
    if (this.violations.size > VIOLATIONS_KEPT) this.violations.delete(this.violations.keys().next().value!);
    const said = known ? null : this.words.say(line);
    if (said !== null) this.log(said);
    this.emit('violation', line);
  }

  /** A NATS callback that can never throw into the client's reader (a throw there stalls the whole link). */
  guard(what: Heard | 'calls', handle: (msg: Msg) => void | Promise<void>): MsgCallback<Msg> {
    const fail = (error: unknown) => {
      const reason = `failed: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`.slice(0, 200);
      if (what === 'calls') this.refuse(reason);
      else this.drop(what, reason, 'its subscription');
    };
    return (error, msg) => {
      // A subscription's own errors (permission violations) also reach the connection's status, counted there.
      if (error) return;
      try {
        const done = handle(msg);
        if (done) done.catch(fail);
      } catch (caught) {
        fail(caught);
      }
    };
  }

  view(): Pick<ClusterStatusView, 'dropped' | 'refused' | 'unsent' | 'violations'> {
    return structuredClone({ dropped: this.dropped, refused: this.refused, unsent: this.unsent, violations: [...this.violations.values()] });
  }

  private count(counts: Record<string, number>, reason: string, first: () => string): void {
    if (counts[reason] === undefined && Object.keys(counts).length >= REASONS_KEPT) reason = 'other';
    counts[reason] = (counts[reason] ?? 0) + 1;
    if (counts[reason] === 1) this.log(first());
  }
}
