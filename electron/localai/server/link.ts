// The LocalAI server beside this node (`local-ai run` on the same backends directory), reached through its HTTP API,
// as a co-runner of the node. LocalAI's single-node path has no guard against the bug Hangar exists for: its upgrade
// stops nothing, and it reuses a model's process on Health alone. So Hangar shows LocalAI's models with the processes
// it finds on this machine (stale when they run from a replaced tree), and after every swap, Hangar's or LocalAI's own,
// brings each model that ran from the replaced tree back on the live one: shutdown, then load, one at a time.
import { watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import type { LocalAiServerRequest } from '../../../shared/api.ts';
import { HangarError } from '../../../shared/errors.ts';
import type { LocalAiServerStatus, LocalAiServerView, ProcessView } from '../../../shared/types.ts';
import type { CoRunner, CoRunnerContext } from '../../core/node/co-runner.ts';
import { oneLine } from '../../core/jobs.ts';
import { isLoopback } from '../../core/net/loopback.ts';
import { listenerPid } from '../../core/platform/linux-listener.ts';
import { sameInode, type DirIdentity } from '../../core/supervisor/identity.ts';
import { parseLocalAiUrl } from '../http.ts';
import { LocalAiServerApi, type SystemInfo } from './api.ts';
import { findServerProcesses, type ServerProcess } from './processes.ts';
import { ServerSettings, FIXED } from './settings.ts';
import { backendVersion, concreteBackend, directoryNote, modelView, type ModelRow } from './views.ts';

export interface LocalAiServerOptions {
  stateDir: string;
  /** Set on the agent's command line: fixed for its run. */
  fixed: LocalAiServerRequest | null;
  /** How often its loaded models are read (LocalAI has no events to follow). */
  pollMs?: number;
  /** How long a model's load may take (a GPU build can take minutes). */
  loadTimeoutMs?: number;
  /** Where a change of the link's state is said, in one line (default: the host's stderr). */
  log?(line: string): void;
}

/** How the link stands, as the status tells it (the counts are read when it is shown). */
type LinkState = Omit<LocalAiServerStatus, 'models' | 'backendsNote'>;

const DEFAULT_POLL_MS = 2000;
const DEFAULT_LOAD_TIMEOUT_MS = 10 * 60_000;
/** A swap's renames come in a burst: the tree is read once they are done. */
const SETTLE_MS = 30;

export class LocalAiServer implements CoRunner {
  readonly name = 'LocalAI';
  private readonly settings: ServerSettings;
  private context: CoRunnerContext | null = null;
  private api: LocalAiServerApi | null = null;
  private status: LinkState | null = null;
  private system: SystemInfo | null = null;
  private found: ServerProcess[] = [];
  private rows = new Map<string, ModelRow>();
  private readonly memory = new Map<string, number>();
  /** Which model a process was started for, as learned from Hangar's own loads (LocalAI does not say). */
  private readonly learned = new Map<number, string>();
  /** What Hangar last did to a model, shown on its row. */
  private readonly notes = new Map<string, { message: string | null; error: string | null }>();
  private serverPid: number | null = null;
  private timer: NodeJS.Timeout | undefined;
  private settle: NodeJS.Timeout | undefined;
  private watcher: FSWatcher | null = null;
  private respawning: Promise<void> | null = null;
  private polling: Promise<void> | null = null;
  private generation = 0;
  /** The models the views were last told of. */
  private shown = new Set<string>();

  constructor(private readonly options: LocalAiServerOptions) {
    this.settings = new ServerSettings(options.stateDir, options.fixed);
  }

  attach(context: CoRunnerContext): void {
    this.context = context;
    this.watcher = watchDirectory(context.backendsDir, () => {
      clearTimeout(this.settle);
      this.settle = setTimeout(() => this.refresh(), SETTLE_MS);
    });
    void this.settings.load().then(() => this.connect());
  }

  async detach(): Promise<void> {
    this.generation++;
    clearInterval(this.timer);
    clearTimeout(this.settle);
    this.watcher?.close();
    await this.respawning;
  }

  view(): LocalAiServerView {
    const current = this.settings.get();
    const status = this.status && { ...this.status, models: this.system?.loaded.length ?? 0, backendsNote: this.backendsNote() };
    return { url: current?.url ?? null, hasApiKey: Boolean(current?.apiKey), fixed: this.settings.fixed ? FIXED : null, status };
  }

  async update(next: LocalAiServerRequest | null): Promise<LocalAiServerView> {
    if (next) parseLocalAiUrl(next.url, 'LocalAI server');
    await this.settings.save(next);
    this.connect();
    await this.poll();
    return this.view();
  }

  processes(): ProcessView[] {
    return [...this.rows.values()].map((row) => this.viewOf(row));
  }

  owns(model: string): boolean {
    return this.rows.has(model);
  }

  pids(): number[] {
    return this.found.map((p) => p.pid);
  }

  knows(backend: string): boolean | null {
    return this.system ? this.system.backends.includes(backend) : null;
  }

  async modelsIn(_backend: string, identity: DirIdentity): Promise<string[]> {
    this.scan();
    return [...this.rows.values()].filter((r) => r.process?.identity && sameInode(r.process.identity, identity)).map((r) => r.model);
  }

  async reload(backend: string, models: string[]): Promise<string> {
    const done: string[] = [];
    for (const model of models) {
      const started = Date.now();
      await this.again(model);
      const row = this.rows.get(model);
      // Proven by its process, where one can be seen: running from the live tree.
      if (row?.process?.stale) throw new Error(`LocalAI loaded ${model} again, but its process (pid ${row.process.pid}) ${row.process.stale}`);
      const version = backendVersion(this.backendsDir, row?.process?.backend ?? backend);
      done.push(`${model} reloaded${version ? ` from ${version}` : ''} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
    return `LocalAI: ${done.join('; ')}`;
  }

  async unload(models: string[]): Promise<void> {
    const api = this.requireApi();
    for (const model of models) {
      await api.shutdown(model);
      this.notes.delete(model);
    }
    await this.poll();
  }

  async respawn(model: string): Promise<ProcessView> {
    const before = this.rows.get(model)?.process?.pid ?? null;
    try {
      await this.again(model);
    } catch (error) {
      this.notes.set(model, { message: null, error: `respawn through LocalAI failed: ${oneLine(error)}` });
      this.emitRows();
      throw error;
    }
    const row = this.rows.get(model);
    if (!row) throw new HangarError('failed', `LocalAI does not list ${model} as loaded after its load`);
    const after = row.process ? `pid ${before ?? '?'} → ${row.process.pid}, from ${join(this.backendsDir, row.process.backend)}` : 'its process is not visible on this machine';
    this.notes.set(model, { message: `respawned through LocalAI (shutdown, then load): ${after}`, error: null });
    this.emitRows();
    return this.viewOf(row);
  }

  /** Shutdown, then load (LocalAI starts it from the backend's live tree); what it runs is read again after. */
  private async again(model: string): Promise<void> {
    const api = this.requireApi();
    const before = new Set(this.found.map((p) => p.pid));
    await api.shutdown(model);
    await api.load(model, this.options.loadTimeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS);
    this.system = await api.system();
    this.scan();
    const backend = this.rows.get(model)?.backend || null;
    const started = this.found.filter((p) => !before.has(p.pid) && (backend === null || p.backend === concreteBackend(this.backendsDir, backend)));
    if (started.length === 1) {
      this.learned.set(started[0]!.pid, model);
      this.rows = assign(this.backendsDir, this.system, this.found, this.learned);
    }
    this.emitRows();
  }

  private get backendsDir(): string {
    return this.context?.backendsDir ?? '';
  }

  private requireApi(): LocalAiServerApi {
    if (!this.api) throw new HangarError('conflict', 'no LocalAI server is linked (hangar agent --localai-url, or Settings → LocalAI server)');
    return this.api;
  }

  private connect(): void {
    const generation = ++this.generation;
    clearInterval(this.timer);
    this.api = null;
    this.system = null;
    this.status = null;
    this.found = [];
    this.rows = new Map();
    const current = this.settings.get();
    if (!current) return this.emitRows();
    try {
      this.api = new LocalAiServerApi(current.url, current.apiKey ?? null);
    } catch (error) {
      this.status = { connected: false, reason: oneLine(error), version: null, checkedAt: new Date().toISOString() };
      return;
    }
    this.serverPid = null;
    this.timer = setInterval(() => generation === this.generation && void this.poll(), this.options.pollMs ?? DEFAULT_POLL_MS);
    void this.poll();
  }

  /** One read at a time: a LocalAI slow to answer (a health probe can take it minutes) is not asked again meanwhile. */
  private poll(): Promise<void> {
    this.polling ??= this.read().finally(() => (this.polling = null));
    return this.polling;
  }

  /** Reads what LocalAI has loaded (and, once, its version); a failure is said in the status, and tried again next time. */
  private async read(): Promise<void> {
    const api = this.api;
    if (!api) return;
    const generation = this.generation;
    try {
      const system = await api.system();
      this.serverPid ??= serverProcess(api.url);
      const version = this.status?.version ?? (await api.version().catch(() => null));
      if (generation !== this.generation) return;
      this.system = system;
      this.setStatus({ connected: true, reason: null, version, checkedAt: new Date().toISOString() });
      await Promise.all(system.loaded.map(async (m) => {
        const bytes = await api.memory(m.id).catch(() => null);
        if (bytes === null) this.memory.delete(m.id);
        else this.memory.set(m.id, bytes);
      }));
    } catch (error) {
      if (generation !== this.generation) return;
      this.setStatus({ connected: false, reason: oneLine(error), version: this.status?.version ?? null, checkedAt: new Date().toISOString() });
    }
    this.refresh();
  }

  /** Keeps the link's state; a change (linked, or why not) is said once, never the API key. */
  private setStatus(next: LinkState): void {
    const before = this.status;
    this.status = next;
    if (before?.connected === next.connected && before.reason === next.reason) return;
    const log = this.options.log ?? ((line: string) => process.stderr.write(`hangar: ${line}\n`));
    log(next.connected ? `LocalAI server ${this.api?.url}: linked (${next.version ?? 'version unknown'})` : `LocalAI server: ${next.reason}; retrying`);
  }

  /** Reads the processes again, tells the views what changed, and brings back what a swap outside Hangar left stale. */
  private refresh(): void {
    this.scan();
    this.emitRows();
    // Not waited on: a respawn waits for its backend's lock, which the job that asked for this read may hold (a delete
    // unloading the backend's models reads LocalAI again under it).
    if (this.context?.respawnAfterSwap()) void this.respawnStale();
  }

  private scan(): void {
    if (!this.context || !this.system) return;
    if (this.serverPid !== null && !processAlive(this.serverPid)) this.serverPid = null;
    this.found = findServerProcesses(this.backendsDir, this.context.ownPids(), this.serverPid);
    for (const pid of this.learned.keys()) if (!this.found.some((p) => p.pid === pid)) this.learned.delete(pid);
    this.rows = assign(this.backendsDir, this.system, this.found, this.learned);
  }

  /**
   * A model left running from a replaced tree by a swap Hangar did not make (LocalAI's own upgrade): one at a time, each
   * under its backend's lock, so a swap of Hangar's own brings its models back itself and this finds them fresh.
   */
  private respawnStale(): Promise<void> {
    this.respawning ??= (async () => {
      for (const { model, process } of [...this.rows.values()]) {
        if (!process?.stale || !this.context) continue;
        await this.context
          .shared(process.backend, async () => {
            this.scan();
            if (this.rows.get(model)?.process?.stale) await this.respawn(model);
          })
          .catch(() => undefined);
      }
    })().finally(() => (this.respawning = null));
    return this.respawning;
  }

  private viewOf(row: ModelRow): ProcessView {
    return modelView(row, this.backendsDir, this.memory.get(row.model) ?? null, this.notes.get(row.model) ?? null);
  }

  private emitRows(): void {
    const context = this.context;
    if (!context) return;
    for (const view of this.processes()) context.emit({ type: 'process', node: context.node, process: view });
    for (const model of this.shown) if (!this.rows.has(model)) context.emit({ type: 'process-removed', node: context.node, model });
    this.shown = new Set(this.rows.keys());
  }

  private backendsNote(): string | null {
    return this.system && this.context ? directoryNote(this.backendsDir, this.system.backends) : null;
  }
}

/**
 * Each loaded model with its process: the one Hangar saw start for it, else the only process of its backend's
 * directory, else (several models on one backend, LocalAI does not say which is which) the processes in turn.
 */
function assign(backendsDir: string, system: SystemInfo, found: ServerProcess[], learned: Map<number, string>): Map<string, ModelRow> {
  const rows = new Map<string, ModelRow>();
  const free = new Set(found.filter((p) => !learned.has(p.pid)));
  for (const m of system.loaded) {
    const dir = m.backend ? concreteBackend(backendsDir, m.backend) : null;
    const own = found.find((p) => learned.get(p.pid) === m.id);
    const mine = own ?? [...free].find((p) => dir === null || p.backend === dir);
    if (mine) free.delete(mine);
    rows.set(m.id, { model: m.id, backend: m.backend ?? mine?.backend ?? '', process: mine ?? null, guessed: !own && system.loaded.filter((o) => o.backend === m.backend).length > 1 });
  }
  return rows;
}

/** The process listening on a server address of this machine, or null (another machine, or not found). */
function serverProcess(url: string): number | null {
  const { hostname, port, protocol } = new URL(url);
  if (!isLoopback(hostname)) return null;
  return listenerPid(Number(port || (protocol === 'https:' ? 443 : 80)));
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function watchDirectory(dir: string, changed: () => void): FSWatcher | null {
  try {
    const watcher = watch(dir, changed);
    watcher.on('error', () => undefined);
    return watcher;
  } catch {
    return null;
  }
}
