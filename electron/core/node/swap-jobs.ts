// Install, upgrade, rollback and delete as jobs: fetched with no lock held, then swapped under the backend's lock with
// the replaced tree's processes stopped by directory identity first and respawned after, gated on Health (with none
// to respawn, the new build is smoke-started instead). A co-runner's models (a LocalAI server's) that ran from the
// replaced tree are brought back on the new one as part of the gate. A leftover working directory is restored or
// removed under the same lock (swap-words.ts says what each job says).
import { HangarError } from '../../../shared/errors.ts';
import type { LeftoverAction } from '../../../shared/api.ts';
import type { JobKind, JobView, UpgradeAllResult } from '../../../shared/types.ts';
import type { Galleries, GalleryEntry, VariantChoices } from '../gallery/index.ts';
import { stageBackend } from '../install/install.ts';
import { DEFAULT_LIMITS, type ExtractLimits } from '../install/limits.ts';
import type { SourceFactory } from '../install/source.ts';
import { localaiTimestamp } from '../install/metadata.ts';
import { leftoverOf, type BackendStore, type InstalledBackend, type PendingSwap, type SwapHooks, type SwapNote } from '../install/store.ts';
import { tagFallbacks } from '../install/tag-fallback.ts';
import { oneLine } from '../../../shared/error-text.ts';
import type { JobContext, JobRunner } from '../jobs.ts';
import type { DirectorySnapshot } from '../localai-rows.ts';
import type { KeyedLock } from '../locks.ts';
import type { DirectoryStop, PortMove, Supervisor } from '../supervisor/index.ts';
import { dirIdentity } from '../supervisor/identity.ts';
import { keysOf, type Catalog } from './catalog.ts';
import type { CoRunner } from './co-runner.ts';
import { unqualified, type BackendNames } from './names.ts';
import { gateFailure, unsupervisedNotice, verbOf, type VersionChange } from './swap-words.ts';

type Stopped = DirectoryStop['stopped'];


/** How a swap is gated: which processes it may stop, and whether, with none to respawn, the new build is smoke-started. */
export interface GateOptions {
  stopUnsupervised: boolean;
  /** Unset: the node's setting. */
  smokeStart?: boolean;
}

interface SwapMode extends GateOptions {
  force: boolean;
  upgrade: boolean;
}

export interface SwapJobParts {
  runner: JobRunner;
  home: string;
  capability: string;
  galleries: Galleries;
  variantChoices: VariantChoices;
  store: BackendStore;
  sources: SourceFactory[];
  fetch: typeof globalThis.fetch;
  installLimits?: Partial<ExtractLimits>;
  /** The node's per-backend locks: a swap takes its backend alone. */
  locks: KeyedLock;
  supervisor: Supervisor;
  catalog: Catalog;
  names: BackendNames;
  /** One read of the backends directory, and LocalAI's listing of it. */
  snapshot(): Promise<DirectorySnapshot>;
  /** The node's setting: smoke-start a new build that no process of the old one runs to respawn from it. */
  smokeStart(): boolean;
  coRunner: CoRunner | null;
  /** The node's setting: bring the co-runner's models back on a new tree. */
  coRunnerRespawn(): boolean;
}

/** What a swap stopped of its own, and which of the co-runner's models ran from the replaced tree. */
interface Replaced {
  stopped: Stopped;
  coModels: string[];
}

export class SwapJobs {
  constructor(private readonly parts: SwapJobParts) {}

  async install(name: string, options: GateOptions & { force: boolean }): Promise<JobView> {
    // A name no gallery has (a typo) is refused to whoever asked, not made a failed job every viewer is told of.
    await this.parts.galleries.find(name);
    const mode = { ...options, upgrade: false };
    return this.start('install', name, (ctx) => this.fetchAndSwap(name, ctx, mode));
  }

  async upgrade(name: string, options: GateOptions): Promise<JobView> {
    await this.parts.galleries.find(name);
    const mode = { ...options, force: true, upgrade: true };
    return this.start('upgrade', name, (ctx) => this.fetchAndSwap(name, ctx, mode));
  }

  /** Upgrades every backend the listing says is upgradable, one after the other, each job waited for. */
  async upgradeAll(): Promise<UpgradeAllResult[]> {
    const results: UpgradeAllResult[] = [];
    for (const backend of (await this.parts.catalog.backends()).filter((b) => b.upgradable)) {
      const job = await this.parts.runner.wait((await this.upgrade(backend.name, { stopUnsupervised: false })).id);
      results.push({ backend: backend.name, ok: job.state === 'done', error: job.error, job });
    }
    return results;
  }

  /**
   * Installs, upgrades or downgrades to exactly `version`, from the first gallery entry of that name whose `version`
   * is it; refused at once when no gallery offers it.
   */
  async installVersion(requested: string, version: string, options: GateOptions): Promise<JobView> {
    const { galleries, store, names } = this.parts;
    const name = names.plain(requested);
    const entry = (await galleries.entries()).find((e) => e.name.toLowerCase() === name.toLowerCase() && e.version === version);
    if (!entry) throw new HangarError('not-found', `${version} wanted, not offered by this node's galleries`);
    const mode = { ...options, force: true, upgrade: false };
    return this.start((await store.get(entry.name)) ? 'upgrade' : 'install', entry.name, async (ctx) => {
      const now = await store.get(entry.name);
      if (now && !now.broken && now.metadata?.version === version) return `already at ${version}`;
      return this.fetchAndSwap(`${entry.gallery}@${entry.name}`, ctx, mode);
    });
  }

  async rollback(requested: string, options: GateOptions): Promise<JobView> {
    const { store, locks, names } = this.parts;
    const name = names.plain(requested);
    await this.refuseUnknown(name, false);
    await this.refuseNoPrevious(name);
    return this.start('rollback', name, (ctx) =>
      locks.run(name, async () => {
        const backend = await store.get(name);
        if (!backend) throw new HangarError('not-found', `backend ${name} is not installed`);
        ctx.phase('swapping');
        const change = { verb: 'rollback', from: backend.metadata?.version ?? null, to: backend.previous?.version ?? null, replacing: true };
        await this.swapGated(name, ctx, (hooks) => store.rollback(name, hooks), change, options);
      }),
    );
  }

  async delete(requested: string, options: { stopUnsupervised: boolean }): Promise<JobView> {
    const { store, locks, names, supervisor, catalog, snapshot } = this.parts;
    const name = names.plain(requested);
    await this.refuseUnknown(name, true);
    const { stopUnsupervised } = options;
    return this.start('delete', name, (ctx) =>
      locks.run(name, async () => {
        const backend = await store.get(name);
        if (!backend && !(await store.kept()).some((k) => k.name === name)) throw new HangarError('not-found', `backend ${name} is not installed`);
        ctx.phase('stopping');
        const { coModels } = await this.stoppingFirst(name, ctx, stopUnsupervised, (hooks) => store.remove(name, hooks));
        await this.unloadCoModels(ctx, coModels);
        // As LocalAI: deleting a meta deletes its concrete build; deleting a build leaves no meta pointing at nothing.
        const concrete = backend?.metadata?.metaBackendFor;
        if (concrete && (await store.get(concrete))) {
          await this.unloadCoModels(ctx, (await this.stoppingFirst(concrete, ctx, stopUnsupervised, (hooks) => store.remove(concrete, hooks))).coModels);
          await catalog.publishBackend(concrete);
        }
        for (const meta of (await snapshot()).metasOf(name)) {
          await store.remove(meta.name);
          await catalog.publishBackend(meta.name);
        }
        await supervisor.recheck();
        await catalog.publishBackend(name, keysOf(backend));
        const { coRunner } = this.parts;
        if (coRunner?.knows(name)) ctx.notice(`${coRunner.name} still lists ${name} until its restart (it registers backends only when it starts): a load of a model on ${name} waits out its health attempts, about 40 s, then fails`);
      }),
    );
  }

  /** Puts a leftover working directory of a backend back in place, or removes it. */
  async resolveLeftover(name: string, action: LeftoverAction): Promise<void> {
    const { store, locks, supervisor, catalog } = this.parts;
    const leftover = leftoverOf(name);
    if (!leftover) throw new HangarError('not-found', `"${name.slice(0, 80)}" is not a working directory of a backend`);
    await locks.run(leftover.of, async () => {
      const before = (await store.listAll()).find((b) => b.name === name) ?? null;
      if (action === 'restore') await store.restoreLeftover(name);
      else await store.removeLeftover(name);
      await supervisor.recheck();
      await catalog.publishBackend(name, [leftover.of, ...keysOf(before)]);
    });
  }

  /**
   * A name that is not installed (nor, for a delete, kept), with no job under way that could install it, is refused
   * at once; the job checks again under the backend's lock.
   */
  private async refuseUnknown(name: string, kept: boolean): Promise<void> {
    const { store } = this.parts;
    if (await store.get(name)) return;
    if (kept && (await store.kept()).some((k) => k.name === name)) return;
    if (this.underWay(name)) return;
    throw new HangarError('not-found', `backend ${name} is not installed`);
  }

  /** So is a rollback with nothing to roll back to, unless a job under way could leave something. */
  private async refuseNoPrevious(name: string): Promise<void> {
    const backend = await this.parts.store.get(name);
    if (!backend || backend.hasPrevious || this.underWay(name)) return;
    throw new HangarError('not-found', `backend ${name} has no previous version to roll back to`);
  }

  private underWay(name: string): boolean {
    return this.parts.runner.list().some((job) => job.backend === name && job.finishedAt === null);
  }

  private start(kind: JobKind, backend: string, work: (ctx: JobContext) => Promise<string | void>): JobView {
    return this.parts.runner.start(kind, backend, async (ctx) => {
      try {
        return await work(ctx);
      } catch (error) {
        const message = oneLine(error);
        const code = error instanceof HangarError ? error.code : 'failed';
        // A failure that names the backend and says it failed needs no second "failed" (`upgrade echo to 2.0.0 failed:
        // …`); one that only names it (`backend "echo": ENOSPC: …`) is said to have failed the job.
        const said = message.includes(unqualified(backend)) && /\bfailed\b/.test(message);
        throw new HangarError(code, said ? message : `${kind} ${backend} failed: ${message}`);
      }
    });
  }

  /**
   * Stage → fetch (verified, safely extracted) → validate → metadata, with no lock held: a slow or endless source
   * never blocks load, stop or respawn. Then, under the backend's lock: stop by identity → swap → respawn, gated.
   * Returns how a job that had nothing to do ended ('already installed', 'up to date').
   */
  private async fetchAndSwap(requested: string, ctx: JobContext, mode: SwapMode): Promise<string | void> {
    const { galleries, variantChoices, names, capability, store, catalog } = this.parts;
    ctx.phase('resolving');
    const picked = await variantChoices.get(names.plain(requested));
    const { entry, meta } = await galleries.resolve(requested, capability, picked);
    const name = entry.name;
    const before = await this.plan(entry, meta, mode);
    if (before.nothingToDo) return before.nothingToDo;
    const uri = entry.uri;
    if (!uri) throw new HangarError('bad-input', `gallery entry ${entry.gallery}@${name} has no uri`);
    const staged = await stageBackend(store, {
      name,
      uris: [uri, ...entry.mirrors, ...tagFallbacks(uri)],
      ...(entry.sha256 !== null && { sha256: entry.sha256 }),
      factories: this.parts.sources,
      sourceOptions: { baseDir: entry.baseDir, baseUrl: entry.baseUrl },
      details: { alias: entry.alias, galleryUrl: catalog.galleryUrl(entry), version: entry.version },
      signal: ctx.signal,
      onProgress: ctx.progress,
      onPhase: ctx.phase,
      fetch: this.parts.fetch,
      limits: { ...DEFAULT_LIMITS, ...this.parts.installLimits },
      home: this.parts.home,
    });
    try {
      return await this.parts.locks.run(name, async () => {
        // Another job may have changed the backend while this one fetched.
        const now = await this.plan(entry, meta, mode);
        if (now.nothingToDo) return now.nothingToDo;
        const from = now.existing?.metadata?.version ?? null;
        const change = { verb: verbOf(mode.upgrade, from, staged.metadata.version, now.existing !== null), from, to: staged.metadata.version, replacing: now.existing !== null };
        await this.swapGated(name, ctx, (hooks) => staged.commit(hooks), change, mode);
        if (meta) await this.writeMetaDir(meta, entry);
      });
    } finally {
      await staged.discard();
    }
  }

  /** What an install or upgrade of entry would do now: nothing (and why), or replace `existing`. */
  private async plan(entry: GalleryEntry, meta: GalleryEntry | null, mode: SwapMode): Promise<{ existing: InstalledBackend | null; nothingToDo: string | null }> {
    const { store, catalog } = this.parts;
    const existing = await store.get(entry.name);
    if (mode.upgrade && !existing) throw new HangarError('not-found', `backend ${entry.name} is not installed`);
    // As LocalAI: installing what is installed and runnable fetches nothing (a meta still gets its directory).
    if (!mode.force && existing && !existing.broken) {
      if (!meta || (await store.get(meta.name))) return { existing, nothingToDo: 'already installed' };
      await this.writeMetaDir(meta, entry);
      return { existing, nothingToDo: `${entry.name} already installed; ${meta.name} now points at it` };
    }
    if (mode.upgrade && existing && !(await catalog.isUpgradable(existing, entry))) return { existing, nothingToDo: 'up to date' };
    return { existing, nothingToDo: null };
  }

  /**
   * Exactly LocalAI's meta directory: no alias (LocalAI would resolve an alias there to a run.sh that does not
   * exist), and the concrete build's version.
   */
  private async writeMetaDir(meta: GalleryEntry, concrete: GalleryEntry): Promise<void> {
    const { store, catalog } = this.parts;
    await store.writeMeta(meta.name, {
      name: meta.name,
      alias: null,
      metaBackendFor: concrete.name,
      galleryUrl: catalog.galleryUrl(meta),
      installedAt: localaiTimestamp(),
      version: concrete.version,
      uri: null,
      digest: null,
      sha256: null,
    });
    await catalog.publishBackend(meta.name);
  }

  /**
   * Swaps, then respawns what ran from the replaced tree; with nothing to respawn, smoke-starts the new build (one
   * process, until it answers Health) unless told not to. The swap is health-gated: if those processes do not come
   * back from the new tree, the swap is undone, they run again from the old tree, and the rollback target is left as
   * it was. Until the gate passes, the swap's journal says so: a host that dies meanwhile has it undone at its start.
   */
  private async swapGated(
    name: string,
    ctx: JobContext,
    swap: (hooks: SwapHooks) => Promise<PendingSwap>,
    change: VersionChange,
    options: GateOptions,
  ): Promise<void> {
    const { supervisor, store, catalog, coRunner } = this.parts;
    const { stopUnsupervised } = options;
    const about = { job: ctx.job, verb: change.verb, from: change.from, to: change.to };
    const { result: pending, stopped, coModels } = await this.stoppingFirst(name, ctx, stopUnsupervised, swap, about);
    // Every swap looks for the co-runner's models on the replaced tree, those it read before the swap and any since.
    const coReload = coRunner !== null && this.parts.coRunnerRespawn();
    if (coRunner && coModels.length > 0 && !coReload) ctx.notice(`${coRunner.name} still runs ${coModels.join(', ')} from the replaced tree (the localai-respawn setting is off)`);
    // What else ran from the replaced tree is marked stale meanwhile: the respawn waits for nothing but its own start.
    const rechecked = supervisor.recheck();
    // The smoke-started process is stopped while the swap settles: the job ends once it is gone.
    let smoked: Promise<void> = Promise.resolve();
    // A start of the new build that loses its port (it waited long before it listened) is said in the job.
    const ours = new Set(stopped.map((s) => s.model));
    const portMoved = (move: PortMove) => {
      if (move.backend === name && (move.model === null || ours.has(move.model))) ctx.notice(move.model ? `${move.model}: ${move.text}` : move.text);
    };
    supervisor.on('port-moved', portMoved);
    try {
      if (stopped.length > 0) {
        ctx.phase('respawning');
        await supervisor.respawnAll(stopped);
      } else if (!(coReload && coModels.length > 0) && (options.smokeStart ?? this.parts.smokeStart())) {
        ctx.phase('smoke start');
        smoked = (await supervisor.smokeStart({ name, dir: store.liveDir(name) })).stopped;
      }
      // The co-runner's models coming back from the new tree are part of the gate (and prove the build starts).
      if (coReload) {
        if (coModels.length > 0) ctx.phase(`reloading in ${coRunner.name}`);
        // A model found on the replaced tree after the swap goes into its journal too: a crash midway loads it again.
        const found = async (more: string[]) => {
          coModels.push(...more.filter((model) => !coModels.includes(model)));
          await pending.renote();
        };
        const reloaded = await coRunner.reload(name, [...coModels], { signal: ctx.signal, found });
        if (reloaded) ctx.notice(reloaded);
      }
      // So is the journal saying the gate began: a swap a crash could not undo is not one to keep (a full disk).
      await pending.gated;
    } catch (error) {
      await rechecked;
      ctx.phase('rolling back');
      await supervisor.stopByDirectory(store.liveDir(name), { stopUnsupervised, spare: coRunner?.pids() ?? [] });
      await pending.undo();
      await supervisor.recheck();
      await supervisor.respawnAll(stopped).catch(() => undefined);
      const coBack = coReload && coModels.length > 0 ? await coRunner.reload(name, coModels).then(() => '', (again: unknown) => `; ${coRunner.name} could not load ${coModels.join(', ')} from it either: ${oneLine(again)}`) : '';
      await catalog.publishBackend(name);
      throw new HangarError('failed', gateFailure(name, change, oneLine(error)) + coBack);
    } finally {
      supervisor.off('port-moved', portMoved);
    }
    await rechecked;
    await Promise.all([pending.settle().then(() => catalog.publishBackend(name)), smoked]);
    // A running LocalAI registers backends only at its start (and after its own installs): a new name waits for it.
    if (!change.replacing && coRunner?.knows(name) === false) ctx.notice(`${coRunner.name} will see ${name} after its restart (it registers backends only when it starts)`);
  }

  /** A deleted backend's models in the co-runner are stopped: there is no tree to bring them back on. */
  private async unloadCoModels(ctx: JobContext, models: string[]): Promise<void> {
    const { coRunner } = this.parts;
    if (!coRunner || models.length === 0) return;
    ctx.phase(`stopping in ${coRunner.name}`);
    await coRunner.unload(models);
    ctx.notice(`${coRunner.name}: stopped ${models.join(', ')} (their backend is deleted)`);
  }

  /**
   * Runs work whose beforeSwap hook stops, by directory identity, the supervised processes using the live
   * directory (and the others only with stopUnsupervised, never the co-runner's, which it brings back itself); the
   * job's notice names those others, stopped or left running.
   */
  private async stoppingFirst<T>(
    backend: string,
    ctx: JobContext,
    stopUnsupervised: boolean,
    work: (hooks: SwapHooks) => Promise<T>,
    about?: Omit<SwapNote, 'stopped'>,
  ): Promise<{ result: T } & Replaced> {
    const { supervisor, coRunner } = this.parts;
    let stopped: Stopped = [];
    let coModels: string[] = [];
    try {
      const result = await work({
        beforeSwap: async (liveDir, noteKnown) => {
          const identity = coRunner && (await dirIdentity(liveDir));
          coModels = identity ? await coRunner.modelsIn(backend, identity) : [];
          const chosen = (list: Stopped) => ((stopped = list), noteKnown());
          const outcome = await supervisor.stopByDirectory(liveDir, { backend, stopUnsupervised, onChosen: chosen, spare: coRunner?.pids() ?? [] });
          stopped = outcome.stopped;
          const unsupervised = unsupervisedNotice(liveDir, outcome);
          if (unsupervised) ctx.notice(unsupervised);
        },
        ...(about && { note: () => ({ ...about, stopped, coModels }) }),
      });
      return { result, stopped, coModels };
    } catch (error) {
      // Nothing was swapped: what was stopped goes back to the tree it ran from.
      if (stopped.length > 0) await supervisor.respawnAll(stopped).catch(() => undefined);
      throw error;
    }
  }
}
