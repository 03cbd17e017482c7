// Brings LocalAI's models back on a backend's live tree: shutdown, then load (LocalAI starts it from the live tree),
// one at a time, each proven by its process where one can be seen. After a swap it looks again, fresh, for any process
// of LocalAI's still on the replaced tree (a model loaded meanwhile, or loading as the swap ran) until there is none.
// Models it could not reach LocalAI for are kept, shown stale, and reloaded when the link returns.
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { HangarError } from '../../../shared/errors.ts';
import type { ProcessView } from '../../../shared/types.ts';
import { compareVersions } from '../../../shared/version-order.ts';
import { LocalAiUnreachable } from '../http.ts';
import type { ReloadOptions } from '../../core/node/index.ts';
import type { LocalAiServerApi } from './api.ts';
import { concreteBackend } from './backend-names.ts';
import type { ServerProcess } from './processes.ts';
import { backendVersion, type ModelRow } from './views.ts';
import { withLoadNote } from './load-note.ts';
import { oneLine } from '../../../shared/error-text.ts';

/** What the reloader needs of the link. */
export interface ReloadHost {
  readonly backendsDir: string;
  row(model: string): ModelRow | undefined;
  allRows(): ModelRow[];
  serverProcesses(): ServerProcess[];
  /** Whether LocalAI's own pid is known: then every process found is one of its children. */
  serverPidKnown(): boolean;
  readFresh(): Promise<boolean>;
  scan(): Promise<void>;
  learn(pid: number, model: string): void;
  note(model: string, message: string | null, error: string | null): void;
  emitRows(): void;
  viewOf(row: ModelRow): ProcessView;
  requireApi(verb: string, models: string[]): LocalAiServerApi;
  shared<T>(backend: string, work: () => Promise<T>): Promise<T>;
  respawnAfterSwap(): boolean;
  downWords(): string | null;
  recordJob(job: { kind: 'upgrade'; backend: string; startedAt: string; error: string | null; notice: string | null }): void;
}

/** Rounds of looking again after a swap: LocalAI loading from the replaced tree this often is a fight, said as one. */
const MAX_ROUNDS = 20;
const LOOK_AGAIN_MS = 100;

export class Reloader {
  /** Model → why it still runs from a replaced tree: LocalAI could not be reached to reload it. */
  private readonly pending = new Map<string, { backend: string; why: string }>();
  private respawning: Promise<void> | null = null;
  private respawnAgain = false;
  /** Model → backend: what swaps interrupted by the host's stop were reloading. */
  private readonly unfinished = new Map<string, string>();
  private finishing: Promise<void> | null = null;
  /** `model:pid` of stale processes a respawn was tried for. */
  private readonly gaveUp = new Set<string>();
  /** Backend → the version Hangar's last swap of it made live. */
  private readonly installedByHangar = new Map<string, string>();

  constructor(
    private readonly host: ReloadHost,
    private readonly options: { loadTimeoutMs: number; log(line: string): void; loadNote(backend: string): string | null },
  ) {}

  notReloaded(model: string): string | null {
    return this.pending.get(model)?.why ?? null;
  }

  forget(): void {
    this.pending.clear();
  }

  async idle(): Promise<void> {
    await Promise.all([this.respawning, this.finishing]);
  }

  /** After a swap of `backend`: these models, then any other LocalAI process still on the replaced tree. */
  async reload(backend: string, models: string[], { signal, found }: ReloadOptions = {}): Promise<string> {
    const installed = backendVersion(this.host.backendsDir, backend);
    if (installed) this.installedByHangar.set(backend, installed);
    const done: string[] = [];
    const unreached: string[] = [];
    let todo = models;
    for (let round = 1; ; round++) {
      for (const model of todo) {
        signal?.throwIfAborted();
        try {
          done.push(await this.reloadOne(backend, model, signal));
        } catch (error) {
          if (!(error instanceof LocalAiUnreachable) && !this.host.downWords()) throw error;
          unreached.push(model);
          this.pending.set(model, { backend, why: `not reloaded after the swap of ${backend}: ${oneLine(error)}; it runs from the replaced tree until Hangar reaches LocalAI again, then Hangar reloads it` });
        }
      }
      if (unreached.length > 0) break;
      todo = await this.stillOnReplaced(backend, signal);
      if (todo.length === 0) break;
      if (round === MAX_ROUNDS) throw new HangarError('failed', `LocalAI keeps starting ${todo.join(', ')} from the replaced tree of ${backend}`);
      await found?.(todo);
    }
    this.host.emitRows();
    const parts = [...done];
    if (unreached.length > 0) parts.push(`could not reload ${unreached.join(', ')} (${this.host.downWords() ?? 'LocalAI could not be reached'}): they run from the replaced tree, shown stale, and are reloaded when LocalAI answers again`);
    return parts.length > 0 ? `LocalAI: ${parts.join('; ')}` : '';
  }

  /** A person's respawn: shutdown, then load; the pid said is the process that started for it. */
  async respawn(model: string): Promise<ProcessView> {
    const before = this.host.row(model)?.process?.pid ?? null;
    let started: number | null;
    try {
      started = await this.again(model, 'respawn');
    } catch (error) {
      if (!(error instanceof HangarError && error.code === 'conflict')) this.host.note(model, null, `respawn through LocalAI failed: ${oneLine(error)}`);
      this.host.emitRows();
      throw error;
    }
    const row = this.host.row(model);
    if (!row) throw new HangarError('failed', `LocalAI does not list ${model} as loaded after its load`);
    const now = row.process?.pid ?? null;
    if (now !== null && now === before) throw new HangarError('failed', `LocalAI answered the load of ${model}, but no new process of it started: pid ${now} runs on, and is not one LocalAI started`);
    const after = row.process ? `pid ${before ?? '?'} → ${started ?? `${now} (a guess: LocalAI does not say which process is whose)`}, from ${join(this.host.backendsDir, row.process.backend)}` : 'its process is not visible on this machine';
    this.pending.delete(model);
    this.host.note(model, `respawned through LocalAI (shutdown, then load): ${after}`, null);
    this.host.emitRows();
    return this.host.viewOf(this.host.row(model) ?? row);
  }

  /** Models a swap was reloading when the host stopped: loaded again, once LocalAI answers, if it lost them. */
  interrupted(models: Array<{ model: string; backend: string }>): void {
    for (const entry of models) this.unfinished.set(entry.model, entry.backend);
  }

  /** Loads, one at a time under its backend's lock, each model an interrupted swap left unloaded (`loaded`: what LocalAI lists). */
  finishInterrupted(loaded: Set<string>): void {
    if (this.unfinished.size === 0 || this.finishing) return;
    const todo = [...this.unfinished];
    this.unfinished.clear();
    this.finishing = (async () => {
      for (const [model, backend] of todo) {
        if (loaded.has(model)) continue;
        await this.host
          .shared(backend, async () => {
            await this.load(this.host.requireApi('reload', [model]), model, backend);
            this.options.log(`LocalAI: loaded ${model} again, which a swap of ${backend} was reloading when Hangar stopped`);
          })
          .catch((error: unknown) => this.options.log(`LocalAI: could not load ${model} again after the interrupted swap of ${backend}: ${oneLine(error)}`));
      }
      await this.host.readFresh();
    })().finally(() => (this.finishing = null));
  }

  /** The link is back: models a swap could not reload while it was down are reloaded now, each under its backend's lock. */
  linkReturned(): void {
    if (this.pending.size > 0 && this.host.respawnAfterSwap()) void this.respawnStale();
  }

  /**
   * A model left on a replaced tree by a swap Hangar did not make (LocalAI's own upgrade), or that a swap could not
   * reload: each backend's under its lock, so a swap of Hangar's own brings its models back itself. A call while one
   * runs makes it look once more when it ends. What was done for each backend is recorded as a job of the node.
   */
  respawnStale(): Promise<void> {
    if (this.respawning) {
      this.respawnAgain = true;
      return this.respawning;
    }
    this.respawning = (async () => {
      do {
        this.respawnAgain = false;
        const backends = new Set(this.host.allRows().flatMap((r) => this.staleBackendOf(r) ?? []));
        for (const backend of backends) await this.respawnBackend(backend);
      } while (this.respawnAgain);
    })().finally(() => (this.respawning = null));
    return this.respawning;
  }

  /** The backend of a model to bring back (its process stale, or not reloaded by a swap), unless tried for this process. */
  private staleBackendOf(r: ModelRow): string | null {
    if ((!r.process?.stale && !this.pending.has(r.model)) || this.gaveUp.has(`${r.model}:${r.process?.pid ?? 0}`)) return null;
    return r.process?.backend ?? this.pending.get(r.model)?.backend ?? '';
  }

  /**
   * One job for a backend: its stale models, read under its lock (a swap that held it brought its own back) and read
   * again after each round, so those a swap still under way leaves behind are brought back in the same job.
   */
  private async respawnBackend(backend: string): Promise<void> {
    let startedAt = '';
    const tried: string[] = [];
    const done: string[] = [];
    let afterLinkDown = false;
    let error: string | null = null;
    await this.host
      .shared(backend, async () => {
        for (let round = 1; round <= MAX_ROUNDS; round++) {
          await this.host.scan();
          const models = this.host.allRows().filter((r) => this.staleBackendOf(r) === backend);
          if (models.length === 0) break;
          startedAt ||= new Date().toISOString();
          for (const row of models) {
            afterLinkDown ||= this.pending.has(row.model);
            tried.push(row.model);
            // Tried once for this process: a respawn that fails is recorded, not retried at every read.
            this.gaveUp.add(`${row.model}:${row.process?.pid ?? 0}`);
            const started = Date.now();
            await this.respawn(row.model);
            done.push(`${row.model} reloaded in ${((Date.now() - started) / 1000).toFixed(1)} s`);
          }
        }
      })
      .catch((failure: unknown) => (error = oneLine(failure)));
    if (done.length === 0 && error === null) return;
    startedAt ||= new Date().toISOString();
    const version = backendVersion(this.host.backendsDir, backend);
    const why = afterLinkDown ? `once LocalAI answered again after a swap of ${backend}` : `after a swap of ${backend} Hangar did not make (LocalAI's backends page or its auto-upgrade)${version ? `, now ${version}` : ''}`;
    const notice = [`LocalAI: ${done.join('; ') || 'nothing reloaded'} ${why}`, this.fight(backend, version)].filter(Boolean).join('; ');
    this.options.log(error ? `${notice}; failed: ${error}` : notice);
    this.host.recordJob({ kind: 'upgrade', backend, startedAt, notice, error: error && `LocalAI could not reload ${tried.join(', ')} ${why}: ${error}` });
  }

  /** LocalAI putting back an older build than the one Hangar installed: named, with the way out. */
  private fight(backend: string, now: string | null): string | null {
    const ours = this.installedByHangar.get(backend);
    if (!ours || !now || compareVersions(now, ours) >= 0) return null;
    return `LocalAI replaced ${backend} ${ours}, which Hangar installed, with the older ${now}: its own backend gallery offers ${now}, and its auto-upgrade (--auto-upgrade-backends, LOCALAI_AUTO_UPGRADE_BACKENDS) or its backends page installs it. Turn LocalAI's auto-upgrade off, or give LocalAI the gallery Hangar uses (--backend-galleries), or the two will keep replacing each other's build`;
  }

  private async reloadOne(backend: string, model: string, signal?: AbortSignal): Promise<string> {
    const started = Date.now();
    await this.again(model, 'reload', signal);
    const row = this.host.row(model);
    // Proven by its process, where one can be seen: running from the live tree.
    if (row?.process?.stale) throw new HangarError('failed', `LocalAI loaded ${model} again, but its process (pid ${row.process.pid}) ${row.process.stale}`);
    this.pending.delete(model);
    const version = backendVersion(this.host.backendsDir, row?.process?.backend ?? backend);
    return `${model} reloaded${version ? ` from ${version}` : ''} in ${((Date.now() - started) / 1000).toFixed(1)} s`;
  }

  /** Shutdown, then load; what it runs is read again after. The pid of the process that started for it, when one can be told. */
  private async again(model: string, verb: string, signal?: AbortSignal): Promise<number | null> {
    const api = this.host.requireApi(verb, [model]);
    const before = new Set(this.host.serverProcesses().map((p) => p.pid));
    const backend = this.host.row(model)?.backend || null;
    await api.shutdown(model, signal);
    await this.load(api, model, backend, signal);
    await this.host.readFresh();
    const configured = this.host.row(model)?.backend || null;
    const dir = configured && concreteBackend(this.host.backendsDir, configured);
    const started = this.host.serverProcesses().filter((p) => !before.has(p.pid) && (dir === null || p.backend === dir));
    // Another load of the backend (a user's, LocalAI's own) may have started a process meanwhile, from the tree a swap
    // has just set aside; this load's starts on the live one.
    const ours = started.length > 1 ? started.filter((p) => !p.stale) : started;
    if (ours.length === 1) this.host.learn(ours[0]!.pid, model);
    this.host.emitRows();
    return ours.length === 1 ? ours[0]!.pid : null;
  }

  /** LocalAI's load of `model`; a failure on a backend LocalAI's gallery marked since its version changed says so. */
  private async load(api: LocalAiServerApi, model: string, backend: string | null, signal?: AbortSignal): Promise<void> {
    try {
      await api.load(model, this.options.loadTimeoutMs, signal);
    } catch (error) {
      throw error instanceof LocalAiUnreachable || backend === null ? error : withLoadNote(error, model, this.options.loadNote(backend));
    }
  }

  /**
   * LocalAI's models whose processes still run from a replaced tree of `backend`, read fresh. A process of LocalAI's
   * there that it does not list yet is a load under way: waited for until LocalAI lists it or it is gone.
   */
  private async stillOnReplaced(backend: string, signal?: AbortSignal): Promise<string[]> {
    const deadline = Date.now() + this.options.loadTimeoutMs;
    // A cancel asked before there is anything to wait for (no LocalAI, nothing on the replaced tree) ends nothing here:
    // the job goes on past a respawn it could not stop, as it always has.
    for (;;) {
      if (!(await this.host.readFresh())) return [];
      const stale = this.host.serverProcesses().filter((p) => p.stale && p.backend === backend);
      if (stale.length === 0) return [];
      const models = this.host.allRows().filter((r) => r.process && stale.includes(r.process)).map((r) => r.model);
      if (models.length > 0) return models;
      if (!this.host.serverPidKnown()) return [];
      if (Date.now() > deadline) throw new HangarError('failed', `LocalAI's process ${stale.map((p) => `pid ${p.pid}`).join(', ')} still runs from a replaced tree of ${backend}, for no model it lists`);
      await sleep(LOOK_AGAIN_MS, undefined, signal ? { signal } : {});
    }
  }
}
