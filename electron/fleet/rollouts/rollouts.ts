import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { NodeApi } from '../../../shared/api.ts';
import { HangarError } from '../../../shared/errors.ts';
import { canDo } from '../../../shared/localai-worker.ts';
import { describeSelector, parseSelector, selectorArgument, selects } from '../../../shared/selector.ts';
import type { JobView, NodeCard, NodeEvent, RolloutNode, RolloutView } from '../../../shared/types.ts';
import type { DesiredState } from './desired.ts';
import { askOffers, checkOffered, type Offers } from './offers.ts';
import { untilReached, untilStored, type Patience } from './link-waits.ts';
import { settleInFlight, startUpgrade, versionOn, waitReady } from './rollout-node.ts';
import { RECONNECT_JITTER_MS, RECONNECT_WAIT_MS } from '../../nats/reconnect.ts';
import { MISSED_HEARTBEATS } from '../../cluster/heartbeat.ts';
import { activeRefusal, isActive, type RolloutRecord } from '../../cluster/store/bodies.ts';
import { RolloutRun } from './rollout-run.ts';
import { RecordConflict, type RecordEntry, type Records } from '../../cluster/store/records.ts';
import { oneLine } from '../../../shared/error-text.ts';
import { isConvergedLater, rollbackNodes } from '../../../shared/rollback-nodes.ts';

export interface RolloutsOptions {
  /** Routes by node: every member is reached through it. */
  api: NodeApi;
  nodes(): Promise<NodeCard[]>;
  /** Where rollouts are kept: the cluster's store (or the home of a host in no cluster). */
  records: Records<RolloutRecord>;
  desired: DesiredState;
  /** This host, as the coordinator of the rollouts it runs. */
  self: { id: string; name: string };
  /** The coordinator writes a running rollout's record at least this often; 3 missed and it is interrupted. */
  heartbeatMs: number;
  /** Whether this host may write rollout records (a viewer); a node only reads them. */
  writes: boolean;
  emit(event: NodeEvent): void;
  /** How long an upgraded node's processes may take to be back and healthy. */
  readyTimeoutMs?: number;
}

const KEPT = 50;
const READY_POLL_MS = 250;
const DEFAULT_READY_TIMEOUT_MS = 120_000;

/**
 * Rolling upgrades: one node (or maxParallel) at a time, each node's processes back and healthy before the next, a
 * halt at the first failure with the rest untouched. The record lives in the cluster's store, where every viewer
 * reads it; its coordinator rewrites it every heartbeat, and a viewer that sees it go silent for 3 marks it
 * interrupted. Any viewer can then resume it or roll it back; the record's revision decides who does (compare-and-set).
 */
export class Rollouts {
  private readonly runs = new Map<string, RolloutRun>();
  private readonly working = new Set<Promise<void>>();
  /** When this host last saw each record change (its own clock: no two machines' clocks are compared). */
  private readonly lastChange = new Map<string, number>();
  private readonly shown = new Map<string, string>();
  private readonly watchdog: NodeJS.Timeout;
  /** Without the server no record can change: silence then says nothing about a coordinator. */
  private linked = true;
  /** 'back' each time the link comes back; every call a step waits on listens. */
  private readonly relinks = new EventEmitter<{ back: [] }>().setMaxListeners(0);
  private readonly onChange = (key: string, entry: RecordEntry<RolloutRecord> | undefined) => this.heard(key, entry);

  constructor(private readonly options: RolloutsOptions) {
    options.records.on('change', this.onChange);
    for (const entry of options.records.all()) this.heard(entry.key, entry);
    this.watchdog = setInterval(() => void this.findInterrupted(), Math.max(20, Math.min(500, Math.floor(options.heartbeatMs / 4))));
  }

  async list(): Promise<RolloutView[]> {
    await this.options.records.ready();
    return this.options.records.all().map((e) => structuredClone(e.value.rollout)).sort((a, b) => b.startedAt.localeCompare(a.startedAt));
  }

  async start(backend: string, options: { maxParallel: number; on?: string | undefined; version?: string | undefined }): Promise<RolloutView> {
    const { records, desired } = this.options;
    await records.ready();
    const active = records.all().find((e) => e.value.rollout.backend === backend && isActive(e.value.rollout));
    if (active) throw activeRefusal(active.value.rollout);
    const on = options.on ?? 'all';
    const selector = parseSelector(on);
    const members = (await this.options.nodes()).filter((m) => selects(selector, m));
    if (members.length === 0) throw new HangarError('not-found', `no node is one of ${describeSelector(on)}`);
    const offers = await askOffers(this.options.api, members, backend);
    checkOffered(offers, backend, options.version ?? null, on);
    const version = options.version ?? offeredVersion(offers, backend);
    const rollout: RolloutView = {
      id: randomUUID(),
      backend,
      version,
      on,
      maxParallel: options.maxParallel,
      state: 'running',
      startedAt: new Date().toISOString(),
      finishedAt: null,
      coordinator: this.options.self,
      interrupted: null,
      // A cordoned node is passed by from the start, and shown so while the rollout runs.
      nodes: members.map((m) => ({ id: m.id, name: m.name, step: m.cordoned ? 'skipped' : 'pending', reason: m.cordoned ? 'cordoned' : null, from: null, to: null })),
    };
    const record: RolloutRecord = { rollout, heartbeatMs: this.options.heartbeatMs, previous: desired.current(backend), beat: 0 };
    const run = this.own(record, await records.create(rollout.id, record));
    // Recorded after the rollout, whose record keeps its nodes from converging on their own meanwhile.
    if (version !== null) await desired.pin({ backend, version, on, installMissing: false, rollout: rollout.id }).catch(() => undefined);
    this.track(this.upgradeAll(run, members));
    void this.prune();
    return structuredClone(rollout);
  }

  async resume(id: string): Promise<RolloutView> {
    const entry = await this.entry(id);
    const r = entry.value.rollout;
    checkConsistent(entry.value);
    if (r.state !== 'interrupted' || !r.interrupted) {
      const running = r.state === 'running' || r.state === 'rolling-back';
      const halted = r.state === 'halted' ? `; hangar rollback --rollout ${id} undoes what it did, or hangar upgrade ${r.backend} --on ${selectorArgument(r.on)}${r.version ? ` --to ${r.version}` : ''} runs it again` : '';
      throw new HangarError('conflict', running ? `rollout ${id} is ${r.state}, run by ${r.coordinator.name} (${r.coordinator.id}): it is not interrupted` : `rollout ${id} is ${r.state}: there is nothing to resume${halted}`);
    }
    const run = await this.takeOver(entry, { ...r, state: r.interrupted.while, finishedAt: null, coordinator: this.options.self, interrupted: null });
    if (run.rollout.state === 'rolling-back') this.track(this.rollBackAll(run));
    else this.track(this.upgradeAll(run, await this.options.nodes()));
    return structuredClone(run.rollout);
  }

  async rollBack(id: string): Promise<RolloutView> {
    const entry = await this.entry(id);
    const r = entry.value.rollout;
    checkConsistent(entry.value);
    if (r.state === 'running' || r.state === 'rolling-back') throw new HangarError('conflict', `rollout ${id} is still ${r.state}`);
    if (r.state === 'rolled-back') throw new HangarError('conflict', `rollout ${id} was rolled back already, at ${r.finishedAt ?? 'a time not recorded'}`);
    const nodes = rollbackNodes(r, (await this.options.desired.view()).nodes, namesOf(await this.options.nodes()));
    if (!nodes.some((n) => n.step === 'upgraded' || (n.step === 'upgrading' && n.to !== null))) {
      throw new HangarError('conflict', `rollout ${id} upgraded no node that could be rolled back`);
    }
    const run = await this.takeOver(entry, { ...r, nodes, state: 'rolling-back', finishedAt: null, coordinator: this.options.self, interrupted: null });
    // The version before it is given back at once; until then the rollout's own is void on every node (converge.ts).
    await this.options.desired.restore(r.backend, id, entry.value.previous).catch(() => undefined);
    this.track(this.rollBackAll(run));
    return structuredClone(run.rollout);
  }

  /** Resolves when no rollout is running here (the host waits for it before closing). */
  async idle(): Promise<void> {
    while (this.working.size > 0) await Promise.all(this.working);
  }

  /**
   * The link to the server went down or came back. Back, every coordinator gets a fresh 3 heartbeats from when its own
   * link may be back too: it tries to reconnect on its own clock, up to a wait and its jitter after this host did.
   */
  setLinked(linked: boolean): void {
    if (linked && !this.linked) {
      this.relinks.emit('back');
      for (const run of this.runs.values()) run.relinked();
    }
    this.linked = linked;
    const from = Date.now() + RECONNECT_WAIT_MS + RECONNECT_JITTER_MS;
    if (linked) for (const key of this.lastChange.keys()) this.lastChange.set(key, from);
  }

  close(): void {
    clearInterval(this.watchdog);
    this.options.records.off('change', this.onChange);
  }

  private async entry(id: string): Promise<RecordEntry<RolloutRecord>> {
    await this.options.records.ready();
    const entry = this.options.records.get(id);
    if (!entry) throw new HangarError('not-found', `no rollout ${id}`);
    return entry;
  }

  /** Writes the record as this host's, at the revision it was read: only one viewer can win that. */
  private async takeOver(entry: RecordEntry<RolloutRecord>, rollout: RolloutView): Promise<RolloutRun> {
    const record = { ...entry.value, rollout, heartbeatMs: this.options.heartbeatMs, beat: entry.value.beat + 1 };
    try {
      return this.own(record, await this.options.records.update(entry.key, record, entry.revision));
    } catch (error) {
      if (error instanceof RecordConflict) throw new HangarError('conflict', `another viewer took rollout ${entry.key} over first`);
      throw error;
    }
  }

  private own(record: RolloutRecord, revision: number): RolloutRun {
    const id = record.rollout.id;
    const run: RolloutRun = new RolloutRun(record, revision, {
      records: this.options.records,
      heartbeatMs: this.options.heartbeatMs,
      onRelease: () => this.runs.get(id) === run && this.runs.delete(id),
    });
    this.runs.set(id, run);
    return run;
  }

  /**
   * A run whose record moved on without it. Taken over by another viewer, the rollout is theirs now. Lost (erased, or
   * written over in a way this host does not take), it ends here as a halt: no further node is touched, whoever
   * follows it is told, its desired version is given back, and its record is written again as halted.
   */
  private async lose(run: RolloutRun): Promise<void> {
    run.release();
    if (run.takenOver()) return;
    const rollout = run.rollout;
    for (const step of rollout.nodes.filter((n) => n.step === 'pending')) Object.assign(step, { step: 'skipped', reason: "halted: its record was lost from the cluster's store" });
    Object.assign(rollout, { state: 'halted', finishedAt: new Date().toISOString() });
    this.options.emit({ type: 'rollout', node: 'local', rollout: structuredClone(rollout) });
    const patience = { untilMs: Date.now() + this.readyTimeoutMs(), everyMs: READY_POLL_MS, stop: () => false };
    await untilStored(() => this.options.desired.restore(rollout.backend, rollout.id, run.record.previous), patience);
    await untilStored(() => this.options.records.put(rollout.id, { ...run.record, beat: run.record.beat + 1 }), patience);
  }

  private track(work: Promise<void>): void {
    this.working.add(work);
    void work.finally(() => this.working.delete(work));
  }

  /**
   * The version the selected nodes' galleries offer. Null when none names one (a digest change, or no node this host
   * may ask offers an upgrade): each node then takes what its own gallery offers, and no desired version is recorded.
   */
  private async upgradeAll(run: RolloutRun, members: NodeCard[]): Promise<void> {
    const rollout = run.rollout;
    const queue = rollout.nodes.filter((n) => n.step === 'pending' || n.step === 'upgrading');
    let failed: RolloutNode | undefined;
    const worker = async () => {
      for (let step = queue.shift(); step && !failed && !run.lost; step = queue.shift()) {
        await this.upgradeNode(run, step, members.find((m) => m.id === step.id));
        if (step.step === 'failed') failed ??= step;
      }
    };
    await Promise.all(Array.from({ length: Math.min(rollout.maxParallel, queue.length) }, worker));
    if (run.lost) return this.lose(run);
    for (const step of rollout.nodes.filter((n) => n.step === 'pending')) Object.assign(step, { step: 'skipped', reason: `halted: ${failed?.name ?? 'a node'} failed` });
    // A halted rollout gives the desired version back before it says so: no node follows a version that failed. The
    // store may be away as long as the broker is.
    if (failed) await untilStored(() => this.options.desired.restore(rollout.backend, rollout.id, run.record.previous), this.patience(run));
    await run.finish(failed ? 'halted' : 'done');
  }

  private async upgradeNode(run: RolloutRun, step: RolloutNode, member: NodeCard | undefined): Promise<void> {
    const { api } = this.options;
    const rollout = run.rollout;
    // A node that is away, cordoned or not ours to act on is left as it is and said so; it is no failure of the version.
    if (!member) return run.mark(step, 'skipped', 'offline: no longer in the cluster');
    // Unknown is this host's broker away, not the node: the step waits for the link (link-waits.ts).
    if (member.status === 'offline') return run.mark(step, 'skipped', member.kind === 'localai-worker' ? (member.reason ?? member.status) : `${member.status}: ${member.reason ?? 'no heartbeat'}`);
    if (member.cordoned) return run.mark(step, 'skipped', 'cordoned');
    if (member.access === 'not-trusted') return run.mark(step, 'skipped', 'not trusted by this node');
    const resumed = step.step === 'upgrading';
    const node = member.id;
    const reaching = <T>(call: () => Promise<T>) => untilReached(call, this.patience(run));
    try {
      const backend = (await reaching(() => api.backends({ node }))).find((b) => b.name === rollout.backend);
      if (!backend) return run.mark(step, 'skipped', 'not installed');
      step.from ??= backend.version;
      const there = rollout.version === null ? !backend.upgradable : backend.version === rollout.version;
      // A node this rollout was upgrading when it was interrupted may be there already: its doing.
      if (there) return run.mark(step, resumed ? 'upgraded' : 'unchanged', resumed ? null : 'up to date');
      step.to = rollout.version ?? backend.availableVersion;
      // Written, and waited for, before the node is touched: a viewer that resumes it knows this node may have moved.
      // One write: a mark would start its own behind this one, each heard and checked by every member.
      Object.assign(step, { step: 'upgrading', reason: null });
      await run.save();
      // A record lost meanwhile: no node is touched in its name (the step is passed by with the rest).
      if (run.lost) return void Object.assign(step, { step: 'pending', to: null });
      // A node that respawns nothing (a LocalAI worker, whose frontend starts each model on its next request) is not asked to.
      const models = canDo(member, 'respawn') ? backend.processes.map((p) => p.model) : [];
      const job = await reaching(() => startUpgrade(api, node, rollout));
      if (typeof job === 'string') return run.mark(step, 'skipped', job);
      // The job goes on on the node whatever the link does: its end is read from the node once it answers.
      const final = await reaching(() => api.waitJob({ node, id: job.id }));
      if (final.state !== 'done') return run.mark(step, 'failed', jobFailure(final));
      await waitReady(api, { node, backend: rollout.backend, models, untilMs: Date.now() + this.readyTimeoutMs(), everyMs: READY_POLL_MS }, reaching);
      run.mark(step, 'upgraded', null);
    } catch (error) {
      run.mark(step, 'failed', oneLine(error));
    }
  }

  private async rollBackAll(run: RolloutRun): Promise<void> {
    const rollout = run.rollout;
    for (const step of rollout.nodes.filter((n) => n.step === 'upgraded' || n.step === 'upgrading')) {
      if (run.lost) break;
      try {
        // A node its coordinator was upgrading when it stopped may still be at it: that job ends (cancelled, or past
        // the point where it can be) before the node's version is read. Only an upgrade that went through is undone.
        if (step.step === 'upgrading') await settleInFlight(this.options.api, step.id, rollout.backend);
        const runs = await versionOn(this.options.api, step.id, rollout.backend);
        if (step.step === 'upgrading' && runs !== step.to) {
          run.mark(step, 'skipped', 'its upgrade did not go through');
          continue;
        }
        // Back on its version already (a rollback that could not reach it gave back the desired version, which moved
        // it): its build before is the rollout's, so a swap would undo that.
        if (step.from !== null && runs === step.from) {
          run.mark(step, 'rolled-back', `it ran ${step.from} already`);
          continue;
        }
        const job = await this.options.api.rollback({ node: step.id, name: rollout.backend });
        const final = await this.options.api.waitJob({ node: step.id, id: job.id });
        if (final.state !== 'done') throw new HangarError('failed', jobFailure(final));
        const now = await versionOn(this.options.api, step.id, rollout.backend);
        if (now !== step.from) throw new HangarError('failed', `it runs ${now ?? 'no build'} after its rollback, not ${step.from ?? 'the build before'}`);
        run.mark(step, 'rolled-back', isConvergedLater(step) ? step.reason : null);
      } catch (error) {
        run.mark(step, 'upgraded', `rollback failed: ${oneLine(error)}`);
      }
    }
    if (run.lost) return this.lose(run);
    for (const step of rollout.nodes.filter((n) => n.step === 'pending')) Object.assign(step, { step: 'skipped', reason: 'rolled back before it reached this node' });
    // A node that did not come back keeps the rollout halted, so the rollback can be tried again.
    await run.finish(rollout.nodes.some((n) => n.step === 'upgraded') ? 'halted' : 'rolled-back');
  }

  /** How long a step waits for a node the link cannot reach, while this host still runs the rollout. */
  private patience(run: RolloutRun): Patience {
    const onRelinked = (back: () => void) => {
      this.relinks.once('back', back);
      return () => void this.relinks.off('back', back);
    };
    return { untilMs: Date.now() + this.readyTimeoutMs(), everyMs: READY_POLL_MS, stop: () => run.lost, onRelinked };
  }

  private readyTimeoutMs(): number {
    return this.options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS;
  }

  /** A record heard (this host's own writes too): its time is noted, and the UI told when more than its beat changed. */
  private heard(key: string, entry: RecordEntry<RolloutRecord> | undefined): void {
    if (!entry) {
      this.lastChange.delete(key);
      this.shown.delete(key);
      return;
    }
    this.lastChange.set(key, Date.now());
    const text = JSON.stringify(entry.value.rollout);
    if (this.shown.get(key) === text) return;
    this.shown.set(key, text);
    this.options.emit({ type: 'rollout', node: 'local', rollout: structuredClone(entry.value.rollout) });
  }

  /**
   * A running rollout whose record has not changed for MISSED_HEARTBEATS of its coordinator's heartbeats is marked
   * interrupted, with the last step it knew; one this host coordinated before it restarted, at once.
   */
  private async findInterrupted(): Promise<void> {
    if (!this.linked || !this.options.writes) return;
    const now = Date.now();
    for (const entry of this.options.records.all()) {
      const r = entry.value.rollout;
      if ((r.state !== 'running' && r.state !== 'rolling-back') || this.runs.has(r.id)) continue;
      const mine = r.coordinator.id === this.options.self.id;
      const heardAt = this.lastChange.get(entry.key) ?? now;
      if (!mine && now - heardAt < MISSED_HEARTBEATS * entry.value.heartbeatMs) continue;
      // Kept in the record and read long after: a time, not an age that would be stale by then.
      const reason = mine
        ? 'this host stopped while it ran it'
        : `its coordinator ${r.coordinator.name} (${r.coordinator.id}) stopped updating it after ${new Date(heardAt).toISOString()}`;
      const rollout: RolloutView = { ...r, state: 'interrupted', interrupted: { while: r.state, at: new Date(now).toISOString(), reason } };
      // Several viewers may see it at once: the first write wins, the others find the record moved on.
      await this.options.records.update(entry.key, { ...entry.value, rollout, beat: entry.value.beat + 1 }, entry.revision).catch(() => undefined);
    }
  }

  /** Keeps the newest KEPT rollouts; an active one is never removed, nor one whose pin is in force (nodes act on it only while they see it). */
  private async prune(): Promise<void> {
    const pinned = (rollout: RolloutView) => this.options.desired.current(rollout.backend)?.rollout === rollout.id;
    const finished = this.options.records.all().filter((e) => !isActive(e.value.rollout) && !pinned(e.value.rollout)).sort((a, b) => b.value.rollout.startedAt.localeCompare(a.value.rollout.startedAt));
    for (const old of finished.slice(KEPT)) await this.options.records.remove(old.key).catch(() => undefined);
  }
}

/**
 * A record this host acts on must agree with itself: the pin it gives back is of its own backend and not its own, and
 * every node it moved was moved to its version. A record that does not is refused, whoever signed it.
 */
function checkConsistent(record: RolloutRecord): void {
  const r = record.rollout;
  const wrong = (why: string) => new HangarError('conflict', `rollout ${r.id}'s record does not agree with itself (${why}): it is not acted on`);
  if (record.previous && record.previous.backend !== r.backend) throw wrong(`it would give back a pin of ${record.previous.backend}, not ${r.backend}`);
  if (record.previous?.rollout === r.id) throw wrong('it would give back its own pin');
  const astray = r.nodes.find((n) => n.to !== null && r.version !== null && n.to !== r.version);
  if (astray) throw wrong(`node ${astray.name} was moved to ${astray.to}, not ${r.version}`);
}

function namesOf(cards: NodeCard[]): (id: string) => string | undefined {
  return (id) => cards.find((c) => c.id === id)?.name;
}

function jobFailure(job: JobView): string {
  return job.error ?? `${job.kind} ${job.state}`;
}

/** The one version the nodes' galleries offer as an upgrade (null: none does); several are a choice for the user. */
function offeredVersion(offers: Offers, backend: string): string | null {
  if (offers.upgrades.size <= 1) return offers.upgrades.keys().next().value ?? null;
  const list = [...offers.upgrades].map(([version, names]) => `${version} on ${names.join(', ')}`).join('; ');
  throw new HangarError('conflict', `the nodes' galleries offer different versions of ${backend} (${list}): name one with --to VERSION`);
}
