// One LocalAI worker as a Hangar node: its backends and models read over its own subjects, install, upgrade and
// delete run as Hangar jobs with LocalAI's requests, stop and unload as LocalAI's frontend sends them. What its
// protocol cannot do (rollback, respawn, logs, stale-cwd detection) is refused with the reason.
import { setTimeout as sleep } from 'node:timers/promises';
import type { NodeMethod, NodeRef } from '../../shared/api.ts';
import { HangarError } from '../../shared/errors.ts';
import { workerRefusal } from '../../shared/localai-worker.ts';
import type { BackendView, GalleryEntryView, JobView, NodeEvent, NodeInfo, ProcessView, UpgradeAllResult } from '../../shared/types.ts';
import { JobRunner, type JobContext } from '../core/jobs.ts';
import type { ClusterGalleries } from './cluster-galleries.ts';
import { INDEX_FRESH_MS } from './cluster-galleries.ts';
import { parseLocalAiSize, parseProcessKey, type ProgressEvent, type RunningModel, type WorkerBackend } from './protocol.ts';
import { WorkerCallError, WorkerFailure, type UpgradeReply, type WorkerClient } from './worker-client.ts';
import { stopModel } from './worker-stop.ts';
import { stoppedNote, upgradeProblem, type UpgradeTarget } from './upgrade-outcome.ts';
import { backendViews, galleryViews, isWorkerRowUpgradable, processViews } from './worker-views.ts';
import { oneLine } from '../../shared/error-text.ts';

export interface WorkerIdentity {
  /** Hangar's node id for it. */
  node: string;
  /** LocalAI's node id: its subjects are under it. */
  localaiId: string;
  name: string;
  capability: string;
}

/** A request the host validated with the contract's schemas. */
export type WorkerRequest = NodeRef & { name?: string; model?: string; id?: string; version?: string; force?: boolean; refresh?: boolean };

export interface WorkerNodeOptions {
  client: WorkerClient;
  galleries: ClusterGalleries;
  emit(event: NodeEvent): void;
  /** How long an upgrade waits for the models it stopped to run again before it says the frontend reloads them. */
  reloadWaitMs: number;
  /** How often models.running is asked while waiting. */
  pollMs?: number;
}

const DEFAULT_POLL_MS = 250;

export class WorkerNode {
  private readonly jobs: JobRunner;
  private published = { backends: new Map<string, string>(), processes: new Map<string, string>() };

  constructor(
    private identity: WorkerIdentity,
    private readonly options: WorkerNodeOptions,
  ) {
    this.jobs = new JobRunner(identity.node, (job) => options.emit({ type: 'job', node: identity.node, job }));
  }

  get id(): string {
    return this.identity.node;
  }

  private get pollMs(): number {
    return this.options.pollMs ?? DEFAULT_POLL_MS;
  }

  /** The frontend's registry changed what it says of the worker (its name, its capability). */
  update(identity: WorkerIdentity): void {
    this.identity = identity;
  }

  /** Answers `method`; what needs Hangar on the machine is refused with the reason. */
  async call(method: NodeMethod, req: WorkerRequest): Promise<unknown> {
    const answer = this.answers[method];
    if (!answer) throw new HangarError('conflict', workerRefusal(method));
    return answer(req);
  }

  /** The methods it answers: its card's `can`. */
  get can(): NodeMethod[] {
    return Object.keys(this.answers) as NodeMethod[];
  }

  /** What a worker answers over LocalAI's own protocol: listing, install, upgrade, delete, stopping and unloading models. */
  private readonly answers: Partial<Record<NodeMethod, (req: WorkerRequest) => Promise<unknown>>> = {
    info: async () => this.info(),
    gallery: (req) => this.gallery(req.refresh === true),
    backends: () => this.backends(),
    processes: () => this.processes(),
    jobs: async () => this.jobs.list(),
    waitJob: (req) => this.jobs.wait(String(req.id)),
    install: (req) => (req.force === true ? this.upgrade(plainName(req.name), true) : this.install(plainName(req.name))),
    upgrade: (req) => this.upgrade(plainName(req.name), false),
    installVersion: (req) => this.installVersion(plainName(req.name), String(req.version)),
    upgradeAll: () => this.upgradeAll(),
    delete: (req) => this.delete(plainName(req.name)),
    stop: (req) => this.stop(String(req.model)),
    unload: (req) => this.unload(String(req.model)),
  };

  /** Reads the worker's backends and models again and publishes what changed; the counts for its card. */
  async refresh(): Promise<{ backends: BackendView[]; processes: ProcessView[] }> {
    const [rows, running] = await Promise.all([this.rows(), this.running()]);
    const processes = this.publishProcesses(processViews(running, rows));
    const backends = await backendViews(rows, processes, this.options.galleries);
    this.publishChanges('backends', backends, (v) => v.name, (backend) => ({ type: 'backend', node: this.id, backend }), (name) => ({ type: 'backend-removed', node: this.id, name }));
    return { backends, processes };
  }

  /** The worker's own list, as it reports it (for pairing with a Hangar node on the same directory). */
  rows(): Promise<WorkerBackend[]> {
    return this.options.client.list(this.identity.localaiId).catch(this.failure('list its backends'));
  }

  private info(): NodeInfo {
    return {
      id: this.identity.node,
      name: this.identity.name,
      platform: '',
      arch: '',
      capability: this.identity.capability,
      home: '',
      backendsDir: '',
      modelsDir: '',
      galleries: this.options.galleries.names(),
      galleryProblems: this.options.galleries.problems(),
      version: '',
      processTracking: "by the LocalAI worker itself (its protocol does not say how)",
      addresses: [],
    };
  }

  private async gallery(refresh: boolean): Promise<GalleryEntryView[]> {
    if (refresh) await this.options.galleries.refresh();
    return galleryViews(await this.rows(), this.identity.capability, this.options.galleries);
  }

  private async backends(): Promise<BackendView[]> {
    return (await this.refresh()).backends;
  }

  private async processes(): Promise<ProcessView[]> {
    const [rows, running] = await Promise.all([this.rows(), this.running()]);
    return this.publishProcesses(processViews(running, rows));
  }

  private publishProcesses(views: ProcessView[]): ProcessView[] {
    this.publishChanges('processes', views, (v) => v.model, (process) => ({ type: 'process', node: this.id, process }), (model) => ({ type: 'process-removed', node: this.id, model }));
    return views;
  }

  private running(): Promise<RunningModel[]> {
    return this.options.client.running(this.identity.localaiId).catch(this.failure('list its models'));
  }

  /**
   * backend.install, also of a backend the worker has: as LocalAI's fast path, the worker then starts the backend's own
   * process again when it is not running, and leaves it be when it is.
   */
  private async install(name: string): Promise<JobView> {
    return this.jobs.start('install', name, async (ctx) => {
      const [before, running] = await Promise.all([this.rows(), this.running()]);
      const ran = running.some((m) => m.model_id === name && m.replica_index === 0);
      ctx.phase('sending backend.install to the worker');
      const galleries = await this.options.galleries.json();
      const { address } = await this.options.client
        .install(this.identity.localaiId, { backend: name, backend_galleries: galleries }, this.progress(ctx))
        .catch(this.failure(`install ${name}`));
      if (before.some((r) => r.name === name)) {
        await this.refresh();
        return ran ? 'already installed; its process runs' : `already installed; the worker started its process again at ${address}, as LocalAI's backend.install does when none runs`;
      }
      const after = await this.rows();
      const row = after.find((r) => r.name === name);
      if (!row) throw new HangarError('failed', `the worker said ${name} was installed, but its backend.list does not have it`);
      await this.refresh();
      ctx.notice(`the worker started a process for ${name} (LocalAI's backend.install starts one)`);
      return row.version ? `installed ${row.version}` : 'installed';
    });
  }

  /**
   * backend.upgrade (or LocalAI's fallback for a worker without it), then the proof: the worker's own backend.list
   * must show what the gallery offers. A worker that reinstalled what it had reads its gallery from the cache LocalAI
   * keeps for up to an hour, and the upgrade fails with that reason instead of counting as done.
   */
  private async upgrade(name: string, reinstall: boolean): Promise<JobView> {
    return this.jobs.start('upgrade', name, async (ctx) => {
      ctx.phase('reading the galleries and the worker');
      await this.options.galleries.refresh(INDEX_FRESH_MS);
      const [rows, entry, running] = await Promise.all([this.rows(), this.options.galleries.byName(name), this.running()]);
      const row = rows.find((r) => r.name === name);
      if (!row) throw new HangarError('not-found', `${name} is not installed on this worker`);
      if (row.is_meta) throw new HangarError('bad-input', `${name} is a meta backend: upgrade the build it points to`);
      if (!entry) throw new HangarError('not-found', `${name} is in none of the LocalAI cluster's galleries`);
      const names = new Set(rows.map((r) => r.name));
      if (!reinstall && !(await isWorkerRowUpgradable(row, entry, names, this.options.galleries))) return 'up to date';
      const target = await this.target(entry);

      ctx.phase('sending backend.upgrade to the worker');
      const galleries = await this.options.galleries.json();
      const outcome = await this.options.client
        .upgrade(this.identity.localaiId, { backend: name, backend_galleries: galleries }, this.progress(ctx))
        .catch(this.failure(`upgrade ${name}`));
      if (outcome.via === 'install') ctx.notice('the worker has no backend.upgrade handler: upgraded with backend.install and force, as LocalAI does for such a worker');
      const stopped = await this.stoppedBy(outcome.reply, running);
      if (!outcome.reply.success) throw new WorkerCallError(this.identity.name, `upgrade ${name}`, (outcome.reply.error || 'it said the upgrade failed, and not why') + stoppedNote(stopped));

      ctx.phase('checking the version the worker reports');
      const after = (await this.rows()).find((r) => r.name === name);
      const problem = upgradeProblem(row, after, target);
      if (problem) throw new HangarError('failed', problem);

      await this.waitForModels(stopped, ctx);
      await this.refresh();
      return after?.version ? `upgraded to ${after.version}` : 'upgraded';
    });
  }

  /**
   * A worker installs only what the cluster's galleries offer now, by name: exactly `version` is the upgrade when they
   * offer it, and refused at once when they do not (as a Hangar node refuses a version its galleries do not offer).
   */
  private async installVersion(name: string, version: string): Promise<JobView> {
    await this.options.galleries.refresh(INDEX_FRESH_MS);
    const entry = await this.options.galleries.byName(name);
    if (entry?.version !== version) {
      const offered = entry ? `they offer ${entry.version ?? 'no version'}` : 'they do not list it';
      throw new HangarError('not-found', `${version} wanted, not offered by the LocalAI cluster's galleries (${offered})`);
    }
    const row = (await this.rows()).find((r) => r.name === name);
    if (row?.version === version) return this.jobs.start('upgrade', name, async () => 'up to date');
    return row ? this.upgrade(name, true) : this.install(name);
  }

  private async upgradeAll(): Promise<UpgradeAllResult[]> {
    const backends = await this.backends();
    const unknown = backends.find((b) => b.upgradesUnknown)?.upgradesUnknown;
    if (unknown) throw new HangarError('failed', `LocalAI worker ${this.identity.name}: which backends have an upgrade is unknown: ${unknown}`);
    const results: UpgradeAllResult[] = [];
    for (const backend of backends.filter((b) => b.upgradable)) {
      const job = await this.jobs.wait((await this.upgrade(backend.name, false)).id);
      results.push({ backend: backend.name, ok: job.state === 'done', error: job.error, job });
    }
    return results;
  }

  private async delete(name: string): Promise<JobView> {
    return this.jobs.start('delete', name, async (ctx) => {
      ctx.phase('sending backend.delete to the worker');
      const reply = await this.options.client.delete(this.identity.localaiId, name).catch(this.failure(`delete ${name}`));
      const stopped = reply.stopped_process_keys.flatMap((key) => parseProcessKey(key)?.model ?? []);
      if (stopped.length > 0) ctx.notice(`the worker stopped ${[...new Set(stopped)].join(', ')}`);
      await this.refresh();
    });
  }

  /** model.stop for each replica, as LocalAI's frontend stops one (backend.stop on a worker from before it). */
  private async stop(model: string): Promise<void> {
    const ctx = { client: this.options.client, localaiId: this.identity.localaiId, running: () => this.running(), rows: () => this.rows(), pollMs: this.pollMs };
    await stopModel(ctx, model).catch(this.failure(`stop ${model}`));
    await this.processes();
  }

  /** model.unload at the model's own address (its first replica's): the backend's Free, the process kept. */
  private async unload(model: string): Promise<ProcessView> {
    const [rows, running] = await Promise.all([this.rows(), this.running()]);
    const replicas = running.filter((m) => m.model_id === model);
    if (replicas.length === 0) throw new HangarError('not-found', `no process runs for model ${model} on this worker`);
    for (const replica of replicas) {
      await this.options.client.unload(this.identity.localaiId, model, replica.address).catch(this.failure(`unload ${model}`));
    }
    const view = processViews(replicas, rows)[0]!;
    return { ...view, loaded: false, message: `model unloaded (Free): the process keeps running; ${view.message}` };
  }

  /**
   * The models an upgrade stopped: those the worker names, or, from a worker that does not (backend.install with
   * force), those that ran before and run no more.
   */
  private async stoppedBy(reply: UpgradeReply, before: RunningModel[]): Promise<string[]> {
    if (reply.reports_stopped_processes) return [...new Set(reply.stopped_process_keys.flatMap((key) => parseProcessKey(key)?.model ?? []))].sort();
    const now = new Set((await this.running()).map((m) => m.model_id));
    return [...new Set(before.map((m) => m.model_id))].filter((model) => !now.has(model)).sort();
  }

  /** What the gallery offers now: its version, or for a versionless OCI entry the tag's digest. */
  private async target(entry: { uri: string | null; version: string | null }): Promise<UpgradeTarget> {
    if (entry.version) return { version: entry.version, digest: null };
    const digest = entry.uri && this.options.galleries.isOci(entry.uri) ? await this.options.galleries.remoteDigest(entry.uri) : null;
    return { version: null, digest };
  }

  /**
   * The models the upgrade stopped, back in models.running within the wait, or said to be reloaded by LocalAI's
   * frontend: the worker's upgrade starts no process, the frontend starts one on the model's next request.
   */
  private async waitForModels(models: string[], ctx: JobContext): Promise<void> {
    if (models.length === 0) return;
    ctx.phase(`waiting for ${models.join(', ')} to run again`);
    const deadline = Date.now() + this.options.reloadWaitMs;
    let missing = models;
    for (;;) {
      const running = new Set((await this.running()).map((m) => m.model_id));
      missing = models.filter((m) => !running.has(m));
      if (missing.length === 0 || Date.now() >= deadline) break;
      await sleep(this.pollMs);
    }
    const back = models.filter((m) => !missing.includes(m));
    if (back.length > 0) ctx.notice(`${back.join(', ')} running again`);
    if (missing.length > 0) ctx.notice(`${missing.join(', ')} stopped by the upgrade and not running yet: LocalAI's frontend starts ${missing.length === 1 ? 'it' : 'them'} again on the next request`);
  }

  private progress(ctx: JobContext): (event: ProgressEvent) => void {
    return (event) => {
      const total = parseLocalAiSize(event.total);
      const percent = Math.max(0, Math.min(100, event.percentage));
      const downloading = event.phase === '' || event.phase === 'downloading';
      // LocalAI's downloading is Hangar's fetching, whose bytes every host shows with percent, speed and time left.
      if (downloading && total !== null) {
        ctx.phase('fetching');
        ctx.progress(Math.round((total * percent) / 100), total);
      } else {
        ctx.phase(`${event.phase || 'downloading'} on the worker${downloading ? `: ${Math.floor(percent)}%` : ''}`);
      }
    };
  }

  /** A worker that cannot be asked is said in the node's words. */
  private failure(what: string): (error: unknown) => never {
    return (error) => {
      if (error instanceof HangarError) throw error;
      throw new WorkerCallError(this.identity.name, what, error instanceof WorkerFailure ? error.message : oneLine(error));
    };
  }

  private publishChanges<V>(
    kind: 'backends' | 'processes',
    views: V[],
    key: (view: V) => string,
    changed: (view: V) => NodeEvent,
    removed: (key: string) => NodeEvent,
  ): void {
    const before = this.published[kind];
    const now = new Map<string, string>();
    for (const view of views) {
      const text = JSON.stringify(view);
      now.set(key(view), text);
      if (before.get(key(view)) !== text) this.options.emit(changed(view));
    }
    for (const name of before.keys()) if (!now.has(name)) this.options.emit(removed(name));
    this.published = { ...this.published, [kind]: now };
  }
}

/** A worker installs a name from all its galleries, first match, as LocalAI asks it: no `gallery@name` choice. */
function plainName(name: string | undefined): string {
  if (!name) throw new HangarError('invalid-request', 'name a backend');
  if (name.includes('@')) throw new HangarError('bad-input', `a LocalAI worker takes a backend by name from the cluster's galleries in order; "${name}" names one gallery`);
  return name;
}

