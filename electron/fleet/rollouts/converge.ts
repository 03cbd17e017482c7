// A node bringing itself to the cluster's desired versions. For each desired version in force that selects it (the
// newest signed by a viewer it trusts), it installs, upgrades or downgrades to match (the same health-gated job as any
// upgrade), unless it is cordoned or a rollout still has work to do on it. A failure to fetch is tried again after 1 s,
// doubling up to 5 min, and given up after 5 tries with the reason kept. A build that failed its health gate here is
// not tried again for that pin, after a restart neither: each try stopped and restarted the models the node runs.
// What it decides it says in the cluster's status bucket. What it took last per backend it keeps on disk, with the
// store's revision of it: a value the store took before that is never acted on, and a value erased from the bucket is
// still the one in force here. A pin a rollout recorded is acted on only while that rollout's record is seen: a record
// erased, or not yet read, never lets a node follow a version its rollout may have halted.
import { join } from 'node:path';
import { LOCAL_NODE } from '../../../shared/api.ts';
import { HangarError } from '../../../shared/errors.ts';
import { selects } from '../../../shared/selector.ts';
import type { NodeConvergence, NodeEvent } from '../../../shared/types.ts';
import { CoalescedFile } from '../../core/coalesced-file.ts';
import type { LocalNodeApi } from '../../core/local-node-api.ts';
import { inForce } from './desired.ts';
import { backendOfKey, rollingBack, touches, type DesiredBody, type RolloutRecord, type StatusBody } from '../../cluster/store/bodies.ts';
import type { RecordEntry, Records } from '../../cluster/store/records.ts';
import { oneLine } from '../../../shared/error-text.ts';

export const MAX_TRIES = 5;
const FIRST_RETRY_MS = 1000;
const MAX_RETRY_MS = 5 * 60_000;
/**
 * A desired version that names a rollout this node has no record of is said to wait for it this many of the cluster's
 * heartbeats (30 s at the default), then to miss it: a running rollout's record is written every heartbeat.
 */
const UNKNOWN_ROLLOUT_GRACE_HEARTBEATS = 15;
const EVALUATE_DEBOUNCE_MS = 50;
/**
 * The longest wait before a status the store did not take (a write that timed out on a loaded server) is written
 * again; the waits double up to it, as an install's tries do, while the store keeps refusing.
 */
const STATUS_RETRY_MAX_MS = 60_000;
/** Node events after which what the node runs, offers or is may differ. */
const RELEVANT: ReadonlySet<NodeEvent['type']> = new Set(['backend', 'backend-removed', 'gallery-changed', 'settings']);

export interface ConvergerOptions {
  /** This machine's node, which knows itself as `local`. */
  node: LocalNodeApi;
  /** Its id in the cluster: the key its status is kept under. */
  id: string;
  /** The desired versions this node takes (signed by a key it trusts); the others are listed as untrusted. */
  desired: Records<DesiredBody>;
  rollouts: Records<RolloutRecord>;
  status: Records<StatusBody>;
  /** Whether a desired version signed by this key may still make the node act (a key untrusted since it was taken). */
  trusts(signer: string): Promise<boolean>;
  stateDir: string;
  /** The cluster's heartbeat, which paces how long a rollout's record is waited for. */
  heartbeatMs: number;
  /** How many backends differ from what they should be, each time it changes. */
  onDrift(count: number): void;
}

type Pinned = DesiredBody & { version: string };

/** The desired version a node last took for a backend: the store's revision of it, its signer and the value. */
interface Taken {
  revision: number;
  signer: string | null;
  body: DesiredBody | null;
  /** Why this pin's build failed its health gate here: it is not tried again. */
  buildFailed?: string;
  /** This pin, a rollout's, moved the node here from this version: that rollout's rollback covers it. */
  movedFrom?: string | null;
}

interface Attempt {
  /** Which desired version the tries were for. */
  for: string;
  tries: number;
  nextAt: number;
  error: string | null;
}

export class Converger {
  private readonly attempts = new Map<string, Attempt>();
  private reports = new Map<string, NodeConvergence>();
  private published = '';
  private running: Promise<void> | null = null;
  private again = false;
  private closed = false;
  private debounce: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;
  private republish: NodeJS.Timeout | undefined;
  /** Status writes the store refused in a row. */
  private refusedWrites = 0;
  private readonly seen: CoalescedFile<Record<string, Taken>>;
  private taken: Record<string, Taken> = {};
  /** What each rollout last said that matters here: its state and this node's step in it. */
  private readonly rolloutSeen = new Map<string, string>();
  /** When this node first saw each pin that names a rollout it has no record of (its own clock), by the pin's revision. */
  private readonly missingSince = new Map<number, number>();
  private readonly onDesired = () => this.evaluateSoon();
  /** A rollout's record changes with every step on every node and every heartbeat: only a change that matters here counts. */
  private readonly onRollout = (key: string, entry: RecordEntry<RolloutRecord> | undefined) => {
    const r = entry?.value.rollout;
    const mark = r ? `${r.state}|${r.interrupted?.while ?? ''}|${r.nodes.find((n) => n.id === this.options.id)?.step ?? ''}` : '';
    if (this.rolloutSeen.get(key) === mark) return;
    if (r) this.rolloutSeen.set(key, mark);
    else this.rolloutSeen.delete(key);
    this.evaluateSoon();
  };
  private readonly onEvent = (event: NodeEvent) => {
    if (RELEVANT.has(event.type)) this.evaluateSoon();
  };

  constructor(private readonly options: ConvergerOptions) {
    this.seen = new CoalescedFile(join(options.stateDir, 'desired-seen.json'));
  }

  async start(): Promise<void> {
    this.taken = readTaken(await this.seen.read());
    this.options.desired.on('change', this.onDesired);
    this.options.desired.on('untrusted', this.onDesired);
    this.options.rollouts.on('change', this.onRollout);
    this.options.node.on('event', this.onEvent);
    this.evaluateSoon();
  }

  /** How many backends differ from their desired version here. */
  drift(): number {
    return [...this.reports.values()].filter((r) => r.state !== 'converged').length;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.debounce);
    clearTimeout(this.retry);
    clearTimeout(this.republish);
    this.options.desired.off('change', this.onDesired);
    this.options.desired.off('untrusted', this.onDesired);
    this.options.rollouts.off('change', this.onRollout);
    this.options.node.off('event', this.onEvent);
    // A job under way goes on in the node, which outlives this; only no new one starts.
    await this.seen.flush().catch(() => undefined);
  }

  private evaluateSoon(): void {
    if (this.closed) return;
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => this.evaluate(), EVALUATE_DEBOUNCE_MS);
  }

  /** One pass at a time; a change during a pass asks for one more. */
  private evaluate(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.pass()
      .catch(() => undefined)
      .finally(() => {
        this.running = null;
        if (this.again && !this.closed) {
          this.again = false;
          this.evaluate();
        }
      });
  }

  private async pass(): Promise<void> {
    const { node } = this.options;
    const wanted = await this.wanted();
    const untrusted = this.untrustedPins(wanted);
    // Nothing wanted of anyone: nothing to read.
    if (wanted.length === 0 && untrusted.length === 0) {
      this.attempts.clear();
      return this.publish(new Map());
    }
    const [backends, settings] = await Promise.all([node.backends({ node: LOCAL_NODE }), node.settings({ node: LOCAL_NODE })]);
    const self = { id: this.options.id, labels: settings.settings.labels };
    const reports = new Map<string, NodeConvergence>();
    const reporter = (body: Pinned) => {
      const installed = backends.find((b) => b.name === body.backend);
      return (state: NodeConvergence['state'], reason: string | null, tries = 0, version = installed?.version ?? null) =>
        reports.set(body.backend, { node: this.options.id, backend: body.backend, wanted: body.version, version, state, reason, tries, at: new Date().toISOString(), ...this.movedBy(body) });
    };
    for (const { body, by } of untrusted) {
      if (!selects(body.on, self) || !backends.some((b) => b.name === body.backend)) continue;
      reporter(body)('drifted', `not acted on: key ${by} signed it, and this node does not trust it`);
    }
    let nextRetry = Infinity;
    for (const { body, revision } of wanted) {
      if (!selects(body.on, self)) continue;
      const installed = backends.find((b) => b.name === body.backend);
      if (!installed && !body.installMissing) continue;
      const report = reporter(body);
      if (installed?.version === body.version && !installed.broken) {
        this.attempts.delete(body.backend);
        report('converged', null);
        continue;
      }
      const rollout = this.rolloutVerdict(body.backend, body.rollout, revision);
      if (rollout === 'void') continue;
      if (rollout !== 'applies' && rollout.lookAgainMs !== undefined) nextRetry = Math.min(nextRetry, rollout.lookAgainMs);
      if (settings.settings.cordoned) {
        report('drifted', 'cordoned: no rollout or convergence touches it');
        continue;
      }
      if (rollout !== 'applies') {
        report('waiting', rollout.waiting);
        continue;
      }
      const buildFailed = this.taken[body.backend]?.buildFailed;
      if (buildFailed !== undefined) {
        report('failed', `its build failed here, not tried again until the pin changes: ${buildFailed}`, 1);
        continue;
      }
      const attempt = this.attemptFor(body, revision);
      if (attempt.tries >= MAX_TRIES) {
        report('failed', `gave up after ${MAX_TRIES} tries: ${attempt.error}`, attempt.tries);
        continue;
      }
      const wait = attempt.nextAt - Date.now();
      if (wait > 0) {
        nextRetry = Math.min(nextRetry, wait);
        report('waiting', `try ${attempt.tries + 1} of ${MAX_TRIES} in ${Math.ceil(wait / 1000)} s; the last failed: ${attempt.error}`, attempt.tries);
        continue;
      }
      report('converging', null, attempt.tries);
      await this.publish(new Map([...this.reports, ...reports]));
      const outcome = await this.converge(body.backend, body.version);
      if (outcome.notOffered) {
        report('drifted', outcome.notOffered);
      } else if (outcome.buildFailed) {
        this.attempts.delete(body.backend);
        this.taken = { ...this.taken, [body.backend]: { ...this.taken[body.backend]!, buildFailed: outcome.buildFailed } };
        this.seen.save(this.taken);
        report('failed', `its build failed here, not tried again until the pin changes: ${outcome.buildFailed}`, 1);
      } else if (outcome.error) {
        attempt.tries++;
        attempt.error = outcome.error;
        attempt.nextAt = Date.now() + retryDelayMs(attempt.tries, MAX_RETRY_MS);
        if (attempt.tries < MAX_TRIES) nextRetry = Math.min(nextRetry, attempt.nextAt - Date.now());
        report(attempt.tries >= MAX_TRIES ? 'failed' : 'waiting', attempt.tries >= MAX_TRIES ? `gave up after ${MAX_TRIES} tries: ${outcome.error}` : `try ${attempt.tries + 1} of ${MAX_TRIES} soon; the last failed: ${outcome.error}`, attempt.tries);
      } else {
        this.attempts.delete(body.backend);
        if (body.rollout !== null) {
          this.taken = { ...this.taken, [body.backend]: { ...this.taken[body.backend]!, movedFrom: installed?.version ?? null } };
          this.seen.save(this.taken);
        }
        // The next pass (the job's backend event brings it) reads the version it runs now.
        report('converged', null, 0, body.version);
      }
    }
    for (const backend of this.attempts.keys()) if (!reports.has(backend)) this.attempts.delete(backend);
    for (const revision of this.missingSince.keys()) if (!wanted.some((w) => w.revision === revision)) this.missingSince.delete(revision);
    await this.publish(reports);
    clearTimeout(this.retry);
    if (nextRetry !== Infinity) this.retry = setTimeout(() => this.evaluateSoon(), nextRetry);
  }

  /**
   * The pin in force for each backend, as this node takes it: the newest value in the bucket, unless the store took
   * it before the one taken here before, or it is gone (erased): then the one taken before, while its signer is still
   * trusted. Unpins are taken too, so an older pin written back after one is never followed.
   */
  private async wanted(): Promise<Array<{ body: Pinned; revision: number }>> {
    let changed = false;
    for (const [backend, entry] of inForce(this.options.desired)) {
      if (entry.revision <= (this.taken[backend]?.revision ?? 0)) continue;
      this.taken = { ...this.taken, [backend]: { revision: entry.revision, signer: entry.signer, body: entry.value } };
      changed = true;
    }
    if (changed) this.seen.save(this.taken);
    const wanted = [];
    for (const { revision, signer, body } of Object.values(this.taken)) {
      if (body?.version == null || signer === null || !(await this.options.trusts(signer))) continue;
      wanted.push({ body: body as Pinned, revision });
    }
    return wanted;
  }

  /** Which rollout's pin moved the node to it, and from what, when one did. */
  private movedBy(body: Pinned): Pick<NodeConvergence, 'movedBy'> {
    const movedFrom = this.taken[body.backend]?.movedFrom;
    return body.rollout === null || movedFrom === undefined ? {} : { movedBy: { rollout: body.rollout, from: movedFrom } };
  }

  /** Pins signed by keys this node does not trust, for backends no trusted pin names: said, never acted on. */
  private untrustedPins(wanted: Array<{ body: Pinned }>): Array<{ body: Pinned; by: string }> {
    const named = new Set(wanted.map((w) => w.body.backend));
    return this.options.desired.untrusted().flatMap((record) => {
      const body = record.value;
      if (body?.version == null || named.has(backendOfKey(record.key))) return [];
      return [{ body: body as Pinned, by: record.by }];
    });
  }

  /**
   * Whether a desired version may move this node now. A rollout with work left on the node makes it wait. The version
   * a rollout recorded is void once it is rolling back (or was interrupted at it), halted or rolled back: its
   * coordinator gives the previous one back, a moment after it took the rollout over, and a node the rollback passes
   * by must not take the rollout's version in between. A rollout this node cannot see (not read yet, or erased) makes
   * it wait too, with a look again when what it says changes.
   */
  private rolloutVerdict(backend: string, id: string | null, revision: number): 'applies' | 'void' | { waiting: string; lookAgainMs?: number } {
    const busy = this.options.rollouts.all().find((r) => r.value.rollout.backend === backend && touches(r.value.rollout, this.options.id));
    if (busy) return { waiting: `rollout ${busy.key} has it in hand (${busy.value.rollout.state})` };
    if (id === null) return 'applies';
    const own = this.options.rollouts.get(id)?.value.rollout;
    if (own) {
      this.missingSince.delete(revision);
      return own.state === 'halted' || own.state === 'rolled-back' || rollingBack(own) ? 'void' : 'applies';
    }
    const since = this.missingSince.get(revision) ?? Date.now();
    this.missingSince.set(revision, since);
    const left = since + UNKNOWN_ROLLOUT_GRACE_HEARTBEATS * this.options.heartbeatMs - Date.now();
    if (left > 0) return { waiting: `rollout ${id} not heard of yet`, lookAgainMs: left };
    return { waiting: `rollout ${id} is not in the cluster's store (erased?): not acted on until its record is back or the desired version changes` };
  }

  private attemptFor(body: DesiredBody, revision: number): Attempt {
    const key = `${body.version}@${revision}`;
    let attempt = this.attempts.get(body.backend);
    if (attempt?.for !== key) {
      attempt = { for: key, tries: 0, nextAt: 0, error: null };
      this.attempts.set(body.backend, attempt);
    }
    return attempt;
  }

  private async converge(backend: string, version: string): Promise<{ notOffered?: string; error?: string; buildFailed?: string }> {
    const { node } = this.options;
    try {
      const job = await node.installVersion({ node: LOCAL_NODE, name: backend, version });
      const final = await node.waitJob({ node: LOCAL_NODE, id: job.id });
      if (final.state === 'done') return {};
      const error = final.error ?? `${final.kind} ${final.state}`;
      return final.phase === 'rolled back' ? { buildFailed: error } : { error };
    } catch (error) {
      if (error instanceof HangarError && error.code === 'not-found') return { notOffered: error.message };
      return { error: oneLine(error) };
    }
  }

  /** Says the node's convergence in the cluster when it changed; a failed write is tried again, backing off. */
  private async publish(reports: Map<string, NodeConvergence>): Promise<void> {
    const before = this.drift();
    this.reports = reports;
    if (this.drift() !== before) this.options.onDrift(this.drift());
    const convergence = [...reports.values()].sort((a, b) => a.backend.localeCompare(b.backend));
    const text = JSON.stringify(convergence.map(({ at: _at, ...rest }) => rest));
    if (text === this.published) return;
    clearTimeout(this.republish);
    try {
      await this.options.status.put(this.options.id, { node: this.options.id, convergence });
      this.published = text;
      this.refusedWrites = 0;
    } catch {
      // Written again soon: a node that has converged has no next pass to write it, and would read converging for ever.
      this.published = '';
      if (this.closed) return;
      this.republish = setTimeout(() => void this.publish(this.reports), retryDelayMs(++this.refusedWrites, STATUS_RETRY_MAX_MS));
    }
  }
}

/** The wait before try `failures + 1`: a second after the first failure, doubling up to `maxMs`. */
function retryDelayMs(failures: number, maxMs: number): number {
  return Math.min(FIRST_RETRY_MS * 2 ** (failures - 1), maxMs);
}

/**
 * What an earlier pass took, as kept on disk. An earlier Hangar kept signing times, which order nothing now: those are
 * left out, and the store's own order (its revisions, checked by the server) keeps a replay out meanwhile.
 */
function readTaken(raw: unknown): Record<string, Taken> {
  if (typeof raw !== 'object' || raw === null) return {};
  const taken: Record<string, Taken> = {};
  for (const [backend, value] of Object.entries(raw)) {
    if (typeof value === 'object' && value !== null && Number.isSafeInteger((value as Taken).revision)) taken[backend] = value as Taken;
  }
  return taken;
}
