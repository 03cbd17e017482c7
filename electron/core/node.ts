import { EventEmitter } from 'node:events';
import { mkdir } from 'node:fs/promises';
import { arch, platform } from 'node:os';
import { join } from 'node:path';
import type { BackendRef, LeftoverAction, ModelRef, NodeApi, NodeRef, SwapOptions } from '../../shared/api.ts';
import { HangarError } from '../../shared/errors.ts';
import type {
  BackendView,
  GalleryEntryView,
  JobKind,
  JobView,
  LoadResult,
  LogLine,
  NodeEvent,
  GalleryProblem,
  NodeInfo,
  NodeSettings,
  ProcessView,
  RestartPolicy,
  ScanEntry,
  SettingsView,
  UpgradeAllResult,
} from '../../shared/types.ts';
import { STARTER_LOCATION } from '../../shared/schemas.ts';
import {
  Galleries,
  VariantChoices,
  detectCapability,
  digestDiffers,
  isEntryCompatible,
  isMeta,
  metaResolution,
  versionVerdict,
  type GalleryEntry,
  type GallerySpec,
} from './gallery/index.ts';
import { BackendStore, LOCALAI_DIR_MODE, leftoverOf, type InstalledBackend, type PendingSwap, type SwapHooks } from './install/store.ts';
import { localaiTimestamp } from './install/metadata.ts';
import { DirectorySnapshot, type Row } from './localai-rows.ts';
import { builtinSources } from './install/sources.ts';
import { stageBackend } from './install/install.ts';
import { DEFAULT_LIMITS, type ExtractLimits } from './install/limits.ts';
import { tagFallbacks } from './install/tag-fallback.ts';
import { DigestResolver, ociSource } from './install/oci/index.ts';
import type { SourceFactory } from './install/source.ts';
import { JobHistory } from './job-history.ts';
import { JobRunner, oneLine, type JobContext } from './jobs.ts';
import { KeyedLock } from './locks.ts';
import { DEFAULT_TRANSFER, guardedFetch, type TransferLimits } from './net/guarded-fetch.ts';
import { SettingsStore } from './settings.ts';
import { removeInterruptedWrites } from './state-file.ts';
import { Supervisor, type BackendTarget, type DirectoryStop, type SupervisorOptions } from './supervisor/index.ts';

export const HANGAR_VERSION = '0.1.0';

/** How often tag digests are re-read (LocalAI checks for backend upgrades on the same cadence). */
const HOUR_MS = 60 * 60 * 1000;
const DIGEST_REFRESH_MS = 6 * HOUR_MS;

export interface LocalNodeOptions {
  id?: string;
  name?: string;
  home: string;
  /** Galleries fixed for this run; without them the node reads the galleries of its settings. */
  galleries?: GallerySpec[];
  /** The index.yaml that the gallery location "starter" names: the gallery Hangar ships. */
  starterGallery?: string;
  /** Environment handed to backends so they find a runtime (HANGAR_NODE, ELECTRON_RUN_AS_NODE). */
  runtimeEnv: Record<string, string>;
  fetch?: typeof globalThis.fetch;
  /** Timeouts for every download (default DEFAULT_TRANSFER). */
  transfer?: Partial<TransferLimits>;
  /** What one installed backend may hold (default DEFAULT_LIMITS). */
  installLimits?: Partial<ExtractLimits>;
  capability?: string;
  /**
   * Fixes auto-upgrade for this run: upgrade every upgradable backend when the gallery changes or digests refresh
   * (LocalAI's auto_upgrade_backends). Without it, the node's settings decide.
   */
  autoUpgrade?: boolean;
  /** Fixes "start backends on launch" for this run; without it, the node's settings decide. */
  startBackendsOnLaunch?: boolean;
  supervisor?: Partial<Omit<SupervisorOptions, 'backendsDir' | 'modelsDir' | 'stateDir' | 'runtimeEnv'>>;
}

type Stopped = DirectoryStop['stopped'];

interface VersionChange {
  verb: string;
  from: string | null;
  to: string | null;
}

/** One machine's node: gallery, installed backends and their processes, behind the NodeApi contract. */
export class LocalNode extends EventEmitter<{ event: [NodeEvent] }> implements NodeApi {
  readonly id: string;
  readonly home: string;
  readonly backendsDir: string;
  readonly modelsDir: string;
  readonly stateDir: string;
  private readonly capability: string;
  private readonly galleries: Galleries;
  private readonly store: BackendStore;
  private readonly supervisor: Supervisor;
  private readonly jobRunner: JobRunner;
  private readonly jobHistory: JobHistory;
  private readonly locks = new KeyedLock();
  private readonly sources: SourceFactory[] = [...builtinSources, ociSource];
  private readonly digests: DigestResolver;
  private readonly variantChoices: VariantChoices;
  private readonly fetch: typeof globalThis.fetch;
  private autoUpgradeTimer: NodeJS.Timeout | undefined;
  private readonly settingsStore: SettingsStore;

  constructor(private readonly options: LocalNodeOptions) {
    super();
    this.id = options.id ?? 'local';
    this.home = options.home;
    this.backendsDir = join(options.home, 'backends');
    this.modelsDir = join(options.home, 'models');
    this.stateDir = join(options.home, 'state');
    this.capability = options.capability ?? detectCapability();
    this.fetch = guardedFetch(options.fetch ?? globalThis.fetch, { ...DEFAULT_TRANSFER, ...options.transfer });
    this.galleries = new Galleries({ specs: options.galleries ?? [], fetch: this.fetch });
    this.settingsStore = new SettingsStore(this.stateDir, this.fixedSettings());
    this.digests = new DigestResolver({ fetch: this.fetch, ttlMs: DIGEST_REFRESH_MS });
    this.store = new BackendStore(this.backendsDir);
    this.variantChoices = new VariantChoices(join(this.stateDir, 'variants.json'));
    this.supervisor = new Supervisor({
      ...options.supervisor,
      backendsDir: this.backendsDir,
      modelsDir: this.modelsDir,
      stateDir: this.stateDir,
      logsDir: join(options.home, 'logs'),
      runtimeEnv: options.runtimeEnv,
      backendLock: (backend, work) => this.locks.shared(backend, work),
    });
    this.jobHistory = new JobHistory(this.stateDir);
    this.jobRunner = new JobRunner(this.id, (job) => this.emitEvent({ type: 'job', node: this.id, job }), this.jobHistory);
    this.supervisor.on('process', (process: ProcessView) => this.emitEvent({ type: 'process', node: this.id, process }));
    this.supervisor.on('process-removed', (model: string) => this.emitEvent({ type: 'process-removed', node: this.id, model }));
    this.supervisor.on('log', (line: LogLine) => this.emitEvent({ type: 'log', node: this.id, line }));
    this.galleries.on('changed', () => void this.onGalleryChanged());
  }

  /** Creates the home layout, finishes interrupted swaps, re-adopts live backends. */
  async start(): Promise<string[]> {
    await mkdir(this.backendsDir, { recursive: true, mode: LOCALAI_DIR_MODE });
    await Promise.all([this.modelsDir, this.stateDir].map((d) => mkdir(d, { recursive: true })));
    const recovered = [...(await removeInterruptedWrites(this.stateDir)), ...(await this.store.recover())];
    await this.settingsStore.load();
    this.applySettings(['galleries', 'portRange', 'autoUpgrade']);
    await this.supervisor.start({ restore: this.settingsStore.current().startBackendsOnLaunch });
    return this.settingsStore.problem ? [...recovered, this.settingsStore.problem] : recovered;
  }

  /** What the host's options fix for this run. */
  private fixedSettings(): Partial<NodeSettings> {
    const { galleries, autoUpgrade, startBackendsOnLaunch, supervisor } = this.options;
    const names = this.galleries.names();
    return {
      ...(galleries && { galleries: galleries.map((spec, i) => ({ name: names[i]!, location: spec.location, enabled: true })) }),
      ...(autoUpgrade !== undefined && { autoUpgrade }),
      ...(startBackendsOnLaunch !== undefined && { startBackendsOnLaunch }),
      ...(supervisor?.portRange && { portRange: supervisor.portRange }),
    };
  }

  /** Makes the changed settings take effect; those only the host acts on (quit, launch) need nothing here. */
  private applySettings(changed: (keyof NodeSettings)[]): void {
    const settings = this.settingsStore.current();
    if (changed.includes('galleries') && this.options.galleries === undefined) {
      const enabled = settings.galleries.filter((g) => g.enabled && (g.location !== STARTER_LOCATION || this.options.starterGallery));
      this.galleries.reconfigure(enabled.map((g) => ({ name: g.name, location: g.location === STARTER_LOCATION ? this.options.starterGallery! : g.location })));
    }
    if (changed.includes('portRange')) this.supervisor.setPortRange(settings.portRange);
    if (changed.includes('autoUpgrade') || changed.includes('autoUpgradeHours')) {
      clearInterval(this.autoUpgradeTimer);
      this.autoUpgradeTimer = settings.autoUpgrade
        ? setInterval(() => {
            this.digests.refresh();
            void this.autoUpgrade();
          }, settings.autoUpgradeHours * HOUR_MS).unref()
        : undefined;
    }
  }


  /** Stops the backends, unless `stopBackends` says otherwise or the settings keep them running. */
  async close(options: { stopBackends?: boolean } = {}): Promise<void> {
    clearInterval(this.autoUpgradeTimer);
    this.galleries.close();
    await this.supervisor.close({ stopAll: options.stopBackends ?? !this.settingsStore.current().keepBackendsRunning });
    // Records that cannot be written must not block shutdown.
    await Promise.all([this.jobHistory.flush(), this.settingsStore.flush()].map((p) => p.catch(() => undefined)));
  }

  async settings(req: NodeRef): Promise<SettingsView> {
    this.check(req);
    return this.settingsStore.view();
  }

  async updateSettings(req: NodeRef & { settings: Partial<NodeSettings> }): Promise<SettingsView> {
    this.check(req);
    const changed = await this.settingsStore.update(req.settings);
    this.applySettings(changed);
    const view = this.settingsStore.view();
    if (changed.length > 0) this.emitEvent({ type: 'settings', node: this.id, settings: view });
    return view;
  }

  async info(req: NodeRef): Promise<NodeInfo> {
    this.check(req);
    return {
      id: this.id,
      name: this.options.name ?? 'This machine',
      platform: platform(),
      arch: arch(),
      capability: this.capability,
      home: this.home,
      backendsDir: this.backendsDir,
      modelsDir: this.modelsDir,
      galleries: this.galleries.names(),
      galleryProblems: await this.galleryProblems(),
      version: HANGAR_VERSION,
    };
  }

  async gallery(req: NodeRef & { refresh?: boolean }): Promise<GalleryEntryView[]> {
    this.check(req);
    if (req.refresh) {
      this.digests.refresh();
      await this.galleries.refresh();
    }
    return this.entryViews();
  }

  /** Views of the gallery's entries, or of those `choose` picks once it has seen the entries and what is installed. */
  private async entryViews(
    choose?: (entries: GalleryEntry[], installed: InstalledBackend[]) => (entry: GalleryEntry) => boolean,
    read?: DirectorySnapshot,
  ): Promise<GalleryEntryView[]> {
    const [entries, snapshot, picks] = await Promise.all([this.galleries.entries(), read ?? this.snapshot(), this.variantChoices.all()]);
    const byName = firstByName(entries);
    const chosen = choose ? entries.filter(choose(entries, snapshot.managed())) : entries;
    return Promise.all(chosen.map((entry) => this.entryView(entry, snapshot, byName, picks.get(entry.name.toLowerCase()) ?? null)));
  }

  async chooseVariant(req: BackendRef & { capability: string | null }): Promise<GalleryEntryView> {
    this.check(req);
    const meta = await this.galleries.find(req.name);
    if (!isMeta(meta)) throw new HangarError('bad-input', `backend "${req.name}" is not a meta backend; it has one build`);
    const entries = await this.galleries.entries();
    const byName = firstByName(entries);
    if (req.capability !== null) {
      const backend = meta.capabilities![req.capability];
      if (!backend) throw new HangarError('bad-input', `backend "${req.name}" has no "${req.capability}" build`);
      const target = byName.get(backend.toLowerCase());
      if (!target || !isEntryCompatible(target, this.capability)) {
        throw new HangarError('bad-input', `the "${req.capability}" build of ${meta.name} (${backend}) does not run on this machine (${this.capability})`);
      }
    }
    await this.variantChoices.set(meta.name, req.capability);
    this.emitEvent({ type: 'gallery-changed', node: this.id, problems: this.galleries.problems() });
    return this.entryView(meta, await this.snapshot(), byName, req.capability);
  }

  private async entryView(entry: GalleryEntry, snapshot: DirectorySnapshot, byName: Map<string, GalleryEntry>, picked: string | null): Promise<GalleryEntryView> {
    const directory = snapshot.directory(entry.name);
    const backend = directory?.kind === 'backend' ? directory : null;
    const meta = isMeta(entry)
      ? metaResolution({
          meta: entry,
          capability: this.capability,
          picked,
          byName: (name) => byName.get(name.toLowerCase()) ?? null,
          installedAs: installedBuildOf(entry, snapshot),
        })
      : null;
    return {
      name: entry.name,
      gallery: entry.gallery,
      alias: entry.alias,
      version: entry.version,
      uri: entry.uri,
      description: entry.description,
      license: entry.license,
      tags: entry.tags,
      icon: entry.icon,
      installed: backend !== null || (meta?.installedAs ?? null) !== null,
      upgradable: backend ? (await this.isUpgradable(backend, entry)) && snapshot.upgradeSkip(backend.name) === null : false,
      compatible: isEntryCompatible(entry, this.capability),
      meta,
    };
  }

  async backends(req: NodeRef): Promise<BackendView[]> {
    this.check(req);
    const [snapshot, entries, picks] = await Promise.all([this.snapshot(), this.entriesByName(), this.variantChoices.all()]);
    const processes = this.processesByBackend();
    return Promise.all(snapshot.rows(picks).map((row) => this.view(row, snapshot, entries.get(row.name.toLowerCase()), processes.get(row.name) ?? [])));
  }

  /** One read of the backends directory, and LocalAI's listing of it. */
  private snapshot(): Promise<DirectorySnapshot> {
    return DirectorySnapshot.read(this.store, this.capability);
  }

  async processes(req: NodeRef): Promise<ProcessView[]> {
    this.check(req);
    return this.supervisor.list();
  }

  async jobs(req: NodeRef): Promise<JobView[]> {
    this.check(req);
    return this.jobRunner.list();
  }

  async install(req: BackendRef & SwapOptions & { force?: boolean }): Promise<JobView> {
    this.check(req);
    const mode = { force: req.force === true, upgrade: false, stopUnsupervised: req.stopUnsupervised === true };
    return this.startJob('install', req.name, (ctx) => this.fetchAndSwap(req.name, ctx, mode));
  }

  async upgrade(req: BackendRef & SwapOptions): Promise<JobView> {
    this.check(req);
    const mode = { force: true, upgrade: true, stopUnsupervised: req.stopUnsupervised === true };
    return this.startJob('upgrade', req.name, (ctx) => this.fetchAndSwap(req.name, ctx, mode));
  }

  async upgradeAll(req: NodeRef): Promise<UpgradeAllResult[]> {
    this.check(req);
    const upgradable = (await this.backends(req)).filter((b) => b.upgradable);
    const results: UpgradeAllResult[] = [];
    for (const backend of upgradable) {
      const job = await this.jobRunner.wait((await this.upgrade({ node: this.id, name: backend.name })).id);
      results.push({ backend: backend.name, ok: job.state === 'done', error: job.error, job });
    }
    return results;
  }

  async rollback(req: BackendRef & SwapOptions): Promise<JobView> {
    this.check(req);
    const name = this.plainName(req.name);
    return this.startJob('rollback', name, (ctx) =>
      this.locks.run(name, async () => {
        ctx.phase('swapping');
        const backend = await this.store.get(name);
        const change = { verb: 'rollback', from: backend?.metadata?.version ?? null, to: backend?.previous?.version ?? null };
        await this.swapGated(name, ctx, (hooks) => this.store.rollback(name, hooks), change, req.stopUnsupervised === true);
      }),
    );
  }

  async delete(req: BackendRef & SwapOptions): Promise<JobView> {
    this.check(req);
    const name = this.plainName(req.name);
    return this.startJob('delete', name, (ctx) =>
      this.locks.run(name, async () => {
        const backend = await this.store.get(name);
        if (!backend && !(await this.store.kept()).some((k) => k.name === name)) throw new HangarError('not-found', `backend ${name} is not installed`);
        ctx.phase('stopping');
        const stopUnsupervised = req.stopUnsupervised === true;
        await this.stoppingFirst(ctx, stopUnsupervised, (hooks) => this.store.remove(name, hooks));
        // As LocalAI: deleting a meta deletes its concrete build; deleting a build leaves no meta pointing at nothing.
        const concrete = backend?.metadata?.metaBackendFor;
        if (concrete && (await this.store.get(concrete))) {
          await this.stoppingFirst(ctx, stopUnsupervised, (hooks) => this.store.remove(concrete, hooks));
          await this.publishBackend(concrete);
        }
        for (const other of await this.store.list()) {
          if (other.metadata?.metaBackendFor === name) {
            await this.store.remove(other.name);
            await this.publishBackend(other.name);
          }
        }
        await this.supervisor.recheck();
        await this.publishBackend(name, keysOf(backend));
      }),
    );
  }

  async resolveLeftover(req: NodeRef & { name: string; action: LeftoverAction }): Promise<void> {
    this.check(req);
    const leftover = leftoverOf(req.name);
    if (!leftover) throw new HangarError('bad-input', `"${req.name.slice(0, 80)}" is not a working directory of a backend`);
    await this.locks.run(leftover.of, async () => {
      const before = (await this.store.listAll()).find((b) => b.name === req.name) ?? null;
      if (req.action === 'restore') await this.store.restoreLeftover(req.name);
      else await this.store.removeLeftover(req.name);
      await this.supervisor.recheck();
      await this.publishBackend(req.name, [leftover.of, ...keysOf(before)]);
    });
  }

  async waitJob(req: NodeRef & { id: string }): Promise<JobView> {
    this.check(req);
    return this.jobRunner.wait(req.id);
  }

  async cancelJob(req: NodeRef & { id: string }): Promise<JobView> {
    this.check(req);
    return this.jobRunner.cancel(req.id);
  }

  async load(req: NodeRef & { backend: string; model: string; restart?: RestartPolicy }): Promise<LoadResult> {
    this.check(req);
    const target = await this.target(req.backend);
    return this.locks.shared(target.name, () => this.supervisor.load(target, req.model, { ...(req.restart && { restart: req.restart }) }));
  }

  async respawn(req: ModelRef): Promise<ProcessView> {
    this.check(req);
    const process = this.processOf(req.model);
    return this.locks.shared(process.backend, () => this.supervisor.respawn(req.model));
  }

  async restart(req: ModelRef): Promise<ProcessView> {
    this.check(req);
    const process = this.processOf(req.model);
    return this.locks.shared(process.backend, () => this.supervisor.restart(req.model));
  }

  async respawnBackend(req: BackendRef): Promise<ProcessView[]> {
    this.check(req);
    const target = await this.target(req.name);
    return this.locks.run(target.name, () => this.supervisor.respawnBackend(target.name));
  }

  async stop(req: ModelRef): Promise<void> {
    this.check(req);
    const process = this.processOf(req.model);
    await this.locks.shared(process.backend, () => this.supervisor.stop(req.model));
  }

  async stopProcess(req: NodeRef & { pid: number }): Promise<void> {
    this.check(req);
    const { model } = await this.supervisor.stoppable(req.pid);
    if (model !== null) await this.stop({ node: req.node, model });
    else await this.supervisor.stopStranger(req.pid);
  }

  async scan(req: NodeRef): Promise<ScanEntry[]> {
    this.check(req);
    return this.supervisor.scan();
  }

  async logs(req: ModelRef): Promise<LogLine[]> {
    this.check(req);
    if (!this.supervisor.knows(req.model)) throw new HangarError('not-found', `no process for model ${req.model}`);
    return this.supervisor.logs(req.model);
  }

  /**
   * Stage → fetch (verified, safely extracted) → validate → metadata, with no lock held: a slow or endless source
   * never blocks load, stop or respawn. Then, under the backend's lock: stop by identity → swap → respawn, gated.
   * Returns how a job that had nothing to do ended ('already installed', 'up to date').
   */
  private async fetchAndSwap(requested: string, ctx: JobContext, mode: { force: boolean; upgrade: boolean; stopUnsupervised: boolean }): Promise<string | void> {
    ctx.phase('resolving');
    const picked = await this.variantChoices.get(this.plainName(requested));
    const { entry, meta } = await this.galleries.resolve(requested, this.capability, picked);
    const name = entry.name;
    const before = await this.plan(entry, meta, mode);
    if (before.nothingToDo) return before.nothingToDo;
    const uri = entry.uri;
    if (!uri) throw new HangarError('bad-input', `gallery entry ${entry.gallery}@${name} has no uri`);
    const staged = await stageBackend(this.store, {
      name,
      uris: [uri, ...entry.mirrors, ...tagFallbacks(uri)],
      ...(entry.sha256 !== null && { sha256: entry.sha256 }),
      factories: this.sources,
      sourceOptions: { baseDir: entry.baseDir, baseUrl: entry.baseUrl },
      details: { alias: entry.alias, galleryUrl: this.galleryLocation(entry), version: entry.version },
      signal: ctx.signal,
      onProgress: ctx.progress,
      onPhase: ctx.phase,
      fetch: this.fetch,
      limits: { ...DEFAULT_LIMITS, ...this.options.installLimits },
      home: this.home,
    });
    try {
      return await this.locks.run(name, async () => {
        // Another job may have changed the backend while this one fetched.
        const now = await this.plan(entry, meta, mode);
        if (now.nothingToDo) return now.nothingToDo;
        const change = { verb: mode.upgrade ? 'upgrade' : 'install', from: now.existing?.metadata?.version ?? null, to: staged.metadata.version };
        await this.swapGated(name, ctx, (hooks) => staged.commit(hooks), change, mode.stopUnsupervised);
        if (meta) await this.writeMetaDir(meta, entry);
      });
    } finally {
      await staged.discard();
    }
  }

  /** What an install or upgrade of entry would do now: nothing (and why), or replace `existing`. */
  private async plan(entry: GalleryEntry, meta: GalleryEntry | null, mode: { force: boolean; upgrade: boolean }): Promise<{ existing: InstalledBackend | null; nothingToDo: string | null }> {
    const existing = await this.store.get(entry.name);
    if (mode.upgrade && !existing) throw new HangarError('not-found', `backend ${entry.name} is not installed`);
    // As LocalAI: installing what is installed and runnable fetches nothing (a meta still gets its directory).
    if (!mode.force && existing && !existing.broken) {
      if (meta && !(await this.store.get(meta.name))) await this.writeMetaDir(meta, entry);
      return { existing, nothingToDo: 'already installed' };
    }
    if (mode.upgrade && existing && !(await this.isUpgradable(existing, entry))) return { existing, nothingToDo: 'up to date' };
    return { existing, nothingToDo: null };
  }

  /**
   * Exactly LocalAI's meta directory: no alias (LocalAI would resolve an alias there to a run.sh that does not
   * exist), and the concrete build's version.
   */
  private async writeMetaDir(meta: GalleryEntry, concrete: GalleryEntry): Promise<void> {
    await this.store.writeMeta(meta.name, {
      name: meta.name,
      alias: null,
      metaBackendFor: concrete.name,
      galleryUrl: this.galleryLocation(meta),
      installedAt: localaiTimestamp(),
      version: concrete.version,
      uri: null,
      digest: null,
      sha256: null,
    });
    await this.publishBackend(meta.name);
  }

  /**
   * Swaps, then respawns what ran from the replaced tree. The swap is health-gated: if those processes do not
   * come back from the new tree, the swap is undone, they run again from the old tree, and the rollback target
   * is left as it was.
   */
  private async swapGated(
    name: string,
    ctx: JobContext,
    swap: (hooks: SwapHooks) => Promise<PendingSwap>,
    change: VersionChange,
    stopUnsupervised: boolean,
  ): Promise<void> {
    const { result: pending, stopped } = await this.stoppingFirst(ctx, stopUnsupervised, swap);
    await this.supervisor.recheck();
    if (stopped.length > 0) {
      ctx.phase('respawning');
      try {
        await this.supervisor.respawnAll(stopped);
      } catch (error) {
        ctx.phase('rolling back');
        await this.supervisor.stopByDirectory(this.store.liveDir(name), { stopUnsupervised });
        await pending.undo();
        await this.supervisor.recheck();
        await this.supervisor.respawnAll(stopped).catch(() => undefined);
        await this.publishBackend(name);
        const version = (v: string | null) => v ?? 'the unversioned build';
        throw new HangarError('failed', `${change.verb} ${name} to ${version(change.to)} failed: ${oneLine(error)}; rolled back to ${version(change.from)}`);
      }
    }
    await pending.settle();
    await this.publishBackend(name);
  }

  /**
   * Runs work whose beforeSwap hook stops, by directory identity, the supervised processes using the live
   * directory (and the others only with stopUnsupervised); the job's notice names those it left running.
   */
  private async stoppingFirst<T>(ctx: JobContext, stopUnsupervised: boolean, work: (hooks: SwapHooks) => Promise<T>): Promise<{ result: T; stopped: Stopped }> {
    let stopped: Stopped = [];
    try {
      const result = await work({
        beforeSwap: async (liveDir) => {
          const outcome = await this.supervisor.stopByDirectory(liveDir, { stopUnsupervised });
          stopped = outcome.stopped;
          if (outcome.leftRunning.length > 0) ctx.notice(leftRunningNotice(liveDir, outcome.leftRunning));
        },
      });
      return { result, stopped };
    } catch (error) {
      // Nothing was swapped: what was stopped goes back to the tree it ran from.
      if (stopped.length > 0) await this.supervisor.respawnAll(stopped).catch(() => undefined);
      throw error;
    }
  }

  private startJob(kind: JobKind, backend: string, work: (ctx: JobContext) => Promise<string | void>): JobView {
    return this.jobRunner.start(kind, backend, async (ctx) => {
      try {
        return await work(ctx);
      } catch (error) {
        const message = oneLine(error);
        const code = error instanceof HangarError ? error.code : 'failed';
        throw new HangarError(code, message.includes(backend) ? message : `${kind} ${backend}: ${message}`);
      }
    });
  }

  /** What `load NAME` starts: the build LocalAI runs for that name (an alias group wins over a meta's own build). */
  private async target(requested: string): Promise<BackendTarget> {
    return (await this.snapshot()).target(this.plainName(requested));
  }

  private processOf(model: string): ProcessView {
    const process = this.supervisor.get(model);
    if (!process) throw new HangarError('not-found', `no process for model ${model}`);
    return process;
  }

  /** Installed backends are addressed by plain name; a gallery qualifier must name a configured gallery. */
  private plainName(name: string): string {
    const at = name.indexOf('@');
    if (at >= 0 && !this.galleries.names().includes(name.slice(0, at))) {
      throw new HangarError('not-found', `no gallery named "${name.slice(0, at)}" (galleries: ${this.galleries.names().join(', ') || 'none'})`);
    }
    return name.slice(at + 1);
  }

  /** `processes` are the row's own. */
  private async view(row: Row, snapshot: DirectorySnapshot, entry: GalleryEntry | undefined, processes: ProcessView[]): Promise<BackendView> {
    const managed = row.kind === 'backend' ? row.backend : null;
    const md = row.backend?.metadata ?? row.kept?.metadata ?? null;
    const notes = [...row.localai];
    let upgradable = managed !== null && entry !== undefined && (await this.isUpgradable(managed, entry));
    const skip = upgradable ? snapshot.upgradeSkip(row.name) : null;
    if (skip) {
      upgradable = false;
      notes.push(`No upgrade offered, as in LocalAI: ${skip}`);
    }
    const uri = entry?.uri ?? md?.uri ?? null;
    if (managed && uri?.startsWith('oci://') && versionVerdict(md?.version ?? null, entry?.version ?? null) === 'digest') {
      notes.push("LocalAI records no digest for an oci:// uri and never offers its upgrade; Hangar compares the image's digest");
    }
    const kept = row.kept && { since: row.kept.since, expiresAt: row.kept.expiresAt, bytes: row.kept.bytes };
    return {
      name: row.name,
      kind: row.kind,
      runs: row.runs,
      localai: notes,
      leftover: row.leftover,
      kept,
      alias: md?.alias ?? null,
      version: md?.version ?? null,
      digest: md?.digest ?? null,
      sha256: md?.sha256 ?? null,
      uri: md?.uri ?? null,
      gallery: managed ? (entry?.gallery ?? null) : null,
      dir: row.backend?.dir ?? row.kept?.dir ?? join(this.backendsDir, row.runs ?? row.name),
      installedAt: md?.installedAt ?? null,
      metaBackendFor: md?.metaBackendFor ?? null,
      upgradable,
      availableVersion: upgradable ? (entry?.version ?? null) : null,
      previous: managed?.previous ? { version: managed.previous.version, installedAt: managed.previous.installedAt } : null,
      broken: row.backend?.broken ?? row.broken,
      processes,
    };
  }

  /** LocalAI's rule: any version difference, a gallery version over none, else the OCI tag digest. */
  private async isUpgradable(backend: InstalledBackend, entry: GalleryEntry): Promise<boolean> {
    // A directory with no metadata.json is, to LocalAI, a backend of that name with no version and no digest.
    const md = backend.metadata;
    if (md?.metaBackendFor || !entry.uri) return false;
    const verdict = versionVerdict(md?.version ?? null, entry.version);
    if (verdict !== 'digest') return verdict;
    if (!ociSource.matches(entry.uri)) return false;
    const remote = await this.remoteDigest(entry.uri);
    return remote !== null && digestDiffers(md?.digest ?? null, remote);
  }

  private async remoteDigest(uri: string): Promise<string | null> {
    try {
      return await this.digests.current(uri);
    } catch {
      return null;
    }
  }

  private async entriesByName(): Promise<Map<string, GalleryEntry>> {
    return firstByName(await this.galleries.entries());
  }

  private galleryLocation(entry: GalleryEntry): string | null {
    return this.galleries.locationOf(entry.gallery);
  }

  /**
   * Publishes the row of `name` and every row a change of it can alter: the names LocalAI runs it for (its alias, a
   * meta naming it) now, and `before`, the names it was listed under before the change.
   */
  private async publishBackend(name: string, before: string[] = []): Promise<void> {
    const [snapshot, entries, picks] = await Promise.all([this.snapshot(), this.entriesByName(), this.variantChoices.all()]);
    const keys = new Set([name, ...before]);
    for (const b of snapshot.listing.backends.values()) if (b.runs === name || b.group.includes(name)) keys.add(b.key);
    await this.publishRows([...keys], snapshot, entries, picks);
    const about = await this.galleryEntriesAbout(name, snapshot);
    if (about.length > 0) this.emitEvent({ type: 'gallery-entries', node: this.id, entries: about });
  }

  private async publishRows(keys: string[], snapshot: DirectorySnapshot, entries: Map<string, GalleryEntry>, picks: ReadonlyMap<string, string>): Promise<void> {
    const processes = this.processesByBackend();
    for (const key of keys) {
      const row = snapshot.row(key, picks);
      if (row) this.emitEvent({ type: 'backend', node: this.id, backend: await this.view(row, snapshot, entries.get(key.toLowerCase()), processes.get(key) ?? []) });
      else this.emitEvent({ type: 'backend-removed', node: this.id, name: key });
    }
  }

  /** The entries a change of backend `name` can alter: its own, and the metas that name it or its alias group. */
  private galleryEntriesAbout(name: string, snapshot: DirectorySnapshot): Promise<GalleryEntryView[]> {
    const same = (other: string | null | undefined) => other?.toLowerCase() === name.toLowerCase();
    return this.entryViews((entries, installed) => {
      const alias = entries.find((e) => same(e.name))?.alias ?? installed.find((b) => same(b.name))?.metadata?.alias ?? null;
      return (e) => same(e.name) || (isMeta(e) && (Object.values(e.capabilities ?? {}).some(same) || (alias !== null && e.name === alias)));
    }, snapshot);
  }

  private processesByBackend(): Map<string, ProcessView[]> {
    const byBackend = new Map<string, ProcessView[]>();
    for (const process of this.supervisor.list()) {
      const list = byBackend.get(process.backend);
      if (list) list.push(process);
      else byBackend.set(process.backend, [process]);
    }
    return byBackend;
  }

  /** Loads every gallery first, so the first answer already says which could not be read. */
  private async galleryProblems(): Promise<GalleryProblem[]> {
    await this.galleries.entries();
    return this.galleries.problems();
  }

  private async onGalleryChanged(): Promise<void> {
    this.emitEvent({ type: 'gallery-changed', node: this.id, problems: this.galleries.problems() });
    const [snapshot, entries, picks] = await Promise.all([this.snapshot(), this.entriesByName(), this.variantChoices.all()]);
    await this.publishRows(snapshot.rows(picks).map((row) => row.name), snapshot, entries, picks);
    if (this.settingsStore.current().autoUpgrade) await this.autoUpgrade();
  }

  /** Each backend's outcome is already published as a job event; a failure here must not stop the node. */
  private async autoUpgrade(): Promise<void> {
    await this.upgradeAll({ node: this.id }).catch(() => undefined);
  }

  private emitEvent(event: NodeEvent): void {
    this.emit('event', event);
  }

  private check(req: NodeRef): void {
    if (req.node !== this.id) throw new HangarError('not-found', `no node ${req.node}`);
  }
}

/** The build LocalAI runs for a meta's name here (its own build, or its alias group's pick), when that is installed. */
function installedBuildOf(meta: GalleryEntry, snapshot: DirectorySnapshot): string | null {
  const runs = snapshot.listing.backends.get(meta.name)?.runs ?? null;
  return runs !== null && snapshot.directory(runs)?.kind === 'backend' ? runs : null;
}

/** The names LocalAI listed a directory under besides its own: its alias, and a meta's own name. */
function keysOf(backend: InstalledBackend | null): string[] {
  return [backend?.metadata?.alias, backend?.facts.metadata?.name].filter((k): k is string => !!k);
}

function leftRunningNotice(dir: string, processes: DirectoryStop['leftRunning']): string {
  const list = processes.map((p) => `pid ${p.pid} (${p.command || 'no command line'})`).join(', ');
  return `left running what Hangar did not start in ${dir}: ${list}; stop-process PID stops one, --stop-unsupervised stops them all`;
}

/** Lower-cased name -> first entry of that name in gallery order (LocalAI matches names case-insensitively). */
function firstByName(entries: GalleryEntry[]): Map<string, GalleryEntry> {
  const byName = new Map<string, GalleryEntry>();
  for (const entry of entries) if (!byName.has(entry.name.toLowerCase())) byName.set(entry.name.toLowerCase(), entry);
  return byName;
}
