// The LocalAI server beside this node (`local-ai run` on the same backends directory), reached through its HTTP API,
// as a co-runner of the node. LocalAI's single-node path has no guard against the bug Hangar exists for: its upgrade
// stops nothing, and it reuses a model's process on Health alone. So Hangar shows LocalAI's models with the processes
// it finds on this machine (stale when they run from a replaced tree), and after every swap, Hangar's or LocalAI's own,
// brings each model that ran from the replaced tree back on the live one: shutdown, then load, one at a time.
import { watch, type FSWatcher } from 'node:fs';
import type { LocalAiServerRequest } from '../../../shared/api.ts';
import { HangarError } from '../../../shared/errors.ts';
import type { LocalAiServerStatus, LocalAiServerView, ProcessView } from '../../../shared/types.ts';
import type { CoRunner, CoRunnerContext, ReloadOptions } from '../../core/node/index.ts';
import { currentPlatform } from '../../core/platform/index.ts';
import { sameInode, type DirIdentity } from '../../core/supervisor/index.ts';
import { LocalAiServerApi, type SystemInfo } from './api.ts';
import { concreteBackend, installed } from './backend-names.ts';
import { checkTarget, type LocalAiTarget } from './target.ts';
import { MemorySampler } from './memory.ts';
import { ProcessHealth } from './process-health.ts';
import { findServerProcesses, processAlive, serverListener, type ServerProcess } from './processes.ts';
import { Reloader } from './reloader.ts';
import { assignProcesses } from './rows.ts';
import { serverSetting } from './settings.ts';
import type { KeptSetting } from '../../core/kept-setting.ts';
import { directoryNote, modelView, type ModelRow } from './views.ts';
import { oneLine } from '../../../shared/error-text.ts';

export type { LocalAiTarget } from './target.ts';

export interface LocalAiServerOptions {
  stateDir: string;
  /** Set on the agent's command line: fixed for its run. */
  fixed: LocalAiServerRequest | null;
  /** How often its loaded models are read (LocalAI has no events to follow). */
  pollMs?: number;
  /** How long a model's load may take (a GPU build can take minutes). */
  loadTimeoutMs?: number;
  /** Whether a plain http:// LocalAI on another machine may be linked (the agent's --insecure). */
  insecure?: boolean;
  /** Where a change of the link's state is said, in one line (default: the host's stderr). */
  log?(line: string): void;
  /** What a failed load of a model on one of these backends (its name as LocalAI gives it, its directory) adds, if anything. */
  loadNote?(...backends: string[]): string | null;
}

/** How the link stands, as the status tells it (the counts are read when it is shown). */
type ServerState = Omit<LocalAiServerStatus, 'models' | 'backendsNote'>;

const DEFAULT_POLL_MS = 2000;
/** As long as Hangar waits for its own backends' Health answer. */
const HEALTH_TIMEOUT_MS = 2000;
const DEFAULT_LOAD_TIMEOUT_MS = 10 * 60_000;
/** A swap's renames come in a burst: the tree is read once they are done. */
const SETTLE_MS = 30;

export class LocalAiServer implements CoRunner {
  readonly name = 'LocalAI';
  private readonly settings: KeptSetting<LocalAiServerRequest>;
  private readonly platform = currentPlatform();
  private context: CoRunnerContext | null = null;
  private api: LocalAiServerApi | null = null;
  private status: ServerState | null = null;
  /** When LocalAI stopped answering, while it does not. */
  private downSince: Date | null = null;
  private system: SystemInfo | null = null;
  private found: ServerProcess[] = [];
  /** Backends directories other than this node's that LocalAI's processes run from. */
  private elsewhere: string[] = [];
  private rows = new Map<string, ModelRow>();
  private memory: MemorySampler | null = null;
  private readonly health = new ProcessHealth(HEALTH_TIMEOUT_MS);
  /** Which model a process was started for, as learned from Hangar's own loads (LocalAI does not say). */
  private readonly learned = new Map<number, string>();
  /** What Hangar last did to a model, shown on its row while the process it did it to runs (0: none visible). */
  private readonly notes = new Map<string, { pid: number; message: string | null; error: string | null }>();
  /** LocalAI's own pid: given by whoever runs it (then only its children count), else found by its port. */
  private serverPid: number | null = null;
  private pidGiven = false;
  /** LocalAI listens through a container's port forwarder. */
  private inContainer = false;
  private timer: NodeJS.Timeout | undefined;
  private settle: NodeJS.Timeout | undefined;
  private watcher: FSWatcher | null = null;
  private polling: Promise<void> | null = null;
  private generation = 0;
  /** The models the views were last told of. */
  private shown = new Set<string>();
  private readonly reloader: Reloader;
  /** The backends installed here at some read: one LocalAI lists that is gone was deleted. */
  private readonly seenInstalled = new Set<string>();

  constructor(private readonly options: LocalAiServerOptions) {
    this.settings = serverSetting(options.stateDir, options.fixed);
    this.reloader = new Reloader(this, {
      loadTimeoutMs: options.loadTimeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS,
      log: (line) => this.log(line),
      loadNote: (backend) => options.loadNote?.(backend, concreteBackend(this.backendsDir, backend)) ?? null,
    });
  }

  attach(context: CoRunnerContext): void {
    this.context = context;
    this.reloader.interrupted(context.interruptedReloads);
    this.watcher = watchDirectory(context.backendsDir, () => {
      clearTimeout(this.settle);
      this.settle = setTimeout(() => void this.refresh(), SETTLE_MS);
    });
    void this.settings.load().then((current) => this.link(current && targetOf(current)));
  }

  async detach(): Promise<void> {
    this.generation++;
    clearInterval(this.timer);
    clearTimeout(this.settle);
    this.watcher?.close();
    this.health.close();
    await this.reloader.idle();
  }

  view(): LocalAiServerView {
    const current = this.settings.get();
    const status = this.status && { ...this.status, models: this.system?.loaded.length ?? 0, backendsNote: this.backendsNote() };
    return { url: current?.url ?? null, hasApiKey: Boolean(current?.apiKey), insecure: current?.insecure === true, fixed: this.settings.fixedReason, status };
  }

  async update(next: LocalAiServerRequest | null): Promise<LocalAiServerView> {
    if (next) checkTarget(targetOf(next), this.options.insecure ?? false);
    const saved = await this.settings.save(next);
    this.link(saved && targetOf(saved));
    await this.poll();
    return this.view();
  }

  /**
   * Links the LocalAI at `target` (null: none), from scratch: the one way a link is made, from Settings, the command
   * line, or whatever starts LocalAI and knows its pid.
   */
  link(target: LocalAiTarget | null): void {
    const generation = ++this.generation;
    clearInterval(this.timer);
    this.api = null;
    this.system = null;
    this.status = null;
    this.downSince = null;
    this.found = [];
    this.rows = new Map();
    this.memory = null;
    this.notes.clear();
    this.reloader.forget();
    if (!target) return this.emitRows();
    try {
      checkTarget(target, this.options.insecure ?? false);
      this.api = new LocalAiServerApi(target.url, target.apiKey);
    } catch (error) {
      this.setStatus({ connected: false, reason: oneLine(error), version: null, checkedAt: new Date().toISOString() });
      return this.emitRows();
    }
    this.memory = new MemorySampler(this.api);
    this.serverPid = target.pid;
    this.pidGiven = target.pid !== null;
    this.inContainer = false;
    this.timer = setInterval(() => generation === this.generation && void this.poll(), this.options.pollMs ?? DEFAULT_POLL_MS);
    void this.poll();
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
    return this.system && this.status?.connected ? this.system.backends.includes(backend) : null;
  }

  /** Read at the moment of the swap: LocalAI's listing fresh, and its processes now. */
  async modelsIn(backend: string, identity: DirIdentity): Promise<string[]> {
    await this.readFresh();
    return [...this.rows.values()]
      .filter((r) => (r.process?.identity ? sameInode(r.process.identity, identity) : !r.process && this.downWords() !== null && concreteBackend(this.backendsDir, r.backend) === backend))
      .map((r) => r.model);
  }

  reload(backend: string, models: string[], options?: ReloadOptions): Promise<string> {
    return this.reloader.reload(backend, models, options);
  }

  async unload(models: string[]): Promise<void> {
    const api = this.requireApi('unload', models);
    for (const model of models) {
      await api.shutdown(model);
      this.notes.delete(model);
    }
    await this.poll();
  }

  respawn(model: string): Promise<ProcessView> {
    return this.reloader.respawn(model);
  }

  // What the reloader works with.

  get backendsDir(): string {
    return this.context?.backendsDir ?? '';
  }

  row(model: string): ModelRow | undefined {
    return this.rows.get(model);
  }

  allRows(): ModelRow[] {
    return [...this.rows.values()];
  }

  serverProcesses(): ServerProcess[] {
    return this.found;
  }

  serverPidKnown(): boolean {
    return this.serverPid !== null;
  }

  viewOf(row: ModelRow): ProcessView {
    const note = this.notes.get(row.model);
    const current = note && note.pid === (row.process?.pid ?? 0) ? note : null;
    return modelView(row, this.backendsDir, {
      reportedMemory: this.memory?.of(row.model) ?? null,
      note: current,
      down: this.downWords(),
      notReloaded: this.reloader.notReloaded(row.model),
      silent: this.health.silence(row.process),
    });
  }

  note(model: string, message: string | null, error: string | null): void {
    this.notes.set(model, { pid: this.rows.get(model)?.process?.pid ?? 0, message, error });
  }

  /** Learns that `pid` was started for `model` (LocalAI does not say which process is whose). */
  learn(pid: number, model: string): void {
    this.learned.set(pid, model);
    if (this.system) this.rows = assignProcesses(this.backendsDir, this.system.loaded, this.found, this.learned);
  }

  /** LocalAI's API, or why it cannot be asked to `verb` these models now. */
  requireApi(verb: string, models: string[]): LocalAiServerApi {
    if (!this.api) throw new HangarError('conflict', 'no LocalAI server is linked (hangar agent --localai-url, or Settings → LocalAI server)');
    const down = this.downWords();
    if (down) throw new HangarError('conflict', `${down}: cannot ${verb} ${models.join(', ')}`);
    return this.api;
  }

  shared<T>(backend: string, work: () => Promise<T>): Promise<T> {
    if (!this.context) return work();
    return this.context.shared(backend, work);
  }

  recordJob(job: Parameters<CoRunnerContext['recordJob']>[0]): void {
    this.context?.recordJob(job);
  }

  respawnAfterSwap(): boolean {
    return this.context?.respawnAfterSwap() ?? false;
  }

  emitRows(): void {
    const context = this.context;
    if (!context) return;
    for (const view of this.processes()) context.emit({ type: 'process', node: context.node, process: view });
    for (const model of this.shown) if (!this.rows.has(model)) context.emit({ type: 'process-removed', node: context.node, model });
    this.shown = new Set(this.rows.keys());
  }

  /** Reads LocalAI again, after any read already under way (which may predate the caller's moment); true when it answered. */
  async readFresh(): Promise<boolean> {
    await this.polling;
    await this.poll();
    return this.status?.connected === true;
  }

  /** Why LocalAI cannot be asked now, as its rows say it, or null while it answers. */
  downWords(): string | null {
    if (!this.status || this.status.connected || !this.downSince) return null;
    const since = this.downSince.toISOString().slice(11, 19);
    const reason = this.status.reason ?? '';
    const gone = /connection refused/.test(reason) || (this.pidGiven && this.serverPid !== null && !processAlive(this.serverPid));
    return gone ? `LocalAI is not running (since ${since} UTC)` : `LocalAI does not answer (since ${since} UTC): ${reason}`;
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
      if (!this.pidGiven && this.serverPid === null) {
        const listener = await serverListener(this.platform, api.url);
        this.serverPid = listener && 'pid' in listener ? listener.pid : null;
        this.inContainer = listener !== null && 'forwarder' in listener;
      }
      const version = this.status?.version ?? (await api.version().catch(() => null));
      if (generation !== this.generation) return;
      this.system = system;
      for (const name of installed(this.backendsDir)) this.seenInstalled.add(name);
      const wasDown = this.downSince !== null;
      this.setStatus({ connected: true, reason: null, version, checkedAt: new Date().toISOString() });
      const loaded = new Set(system.loaded.map((m) => m.id));
      for (const model of this.notes.keys()) if (!loaded.has(model)) this.notes.delete(model);
      this.memory?.sample(system.loaded.map((m) => m.id));
      if (wasDown) this.reloader.linkReturned();
      this.reloader.finishInterrupted(new Set(system.loaded.map((m) => m.id)));
    } catch (error) {
      if (generation !== this.generation) return;
      this.setStatus({ connected: false, reason: oneLine(error), version: this.status?.version ?? null, checkedAt: new Date().toISOString() });
    }
    await this.refresh();
  }

  /** Keeps the link's state; a change (linked, or why not) is said once, never the API key. */
  private setStatus(next: ServerState): void {
    const before = this.status;
    this.status = next;
    if (next.connected) this.downSince = null;
    else this.downSince ??= new Date();
    if (before?.connected === next.connected && before.reason === next.reason) return;
    this.log(next.connected ? `LocalAI server ${this.api?.url}: linked (${next.version ?? 'version unknown'})` : `LocalAI server: ${next.reason}; retrying`);
  }

  private log(line: string): void {
    (this.options.log ?? ((text: string) => process.stderr.write(`hangar: ${text}\n`)))(line);
  }

  /** Reads the processes again, tells the views what changed, and brings back what a swap outside Hangar left stale. */
  private async refresh(): Promise<void> {
    await this.scan();
    this.emitRows();
    const generation = this.generation;
    void this.health.probe(this.found).then((changed) => changed && generation === this.generation && this.emitRows());
    // Not waited on: a respawn waits for its backend's lock, which the job that asked for this read may hold (a delete
    // unloading the backend's models reads LocalAI again under it).
    if (this.context?.respawnAfterSwap() && this.status?.connected) void this.reloader.respawnStale();
  }

  async scan(): Promise<void> {
    const context = this.context;
    if (!context || !this.system) return;
    if (this.serverPid !== null && !processAlive(this.serverPid) && !this.pidGiven) this.serverPid = null;
    const { found, elsewhere } = await findServerProcesses(this.platform, this.backendsDir, context.ownPids(), this.serverPid, this.inContainer);
    if (this.context !== context || !this.system) return;
    ({ found: this.found, elsewhere: this.elsewhere } = { found, elsewhere });
    for (const pid of this.learned.keys()) if (!this.found.some((p) => p.pid === pid)) this.learned.delete(pid);
    this.rows = assignProcesses(this.backendsDir, this.system.loaded, this.found, this.learned);
  }

  private backendsNote(): string | null {
    if (!this.system || !this.context) return null;
    for (const name of installed(this.backendsDir)) this.seenInstalled.add(name);
    const other = this.elsewhere.length > 0 ? `LocalAI runs backends from ${this.elsewhere.join(', ')}, not from this node's ${this.backendsDir}: Hangar's swaps do not touch those` : null;
    return [other, directoryNote(this.backendsDir, this.system.backends, this.seenInstalled)].filter(Boolean).join('; ') || null;
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

/** The LocalAI a kept or given link names (its pid unknown: it was not started here). */
function targetOf(server: LocalAiServerRequest): LocalAiTarget {
  return { url: server.url, apiKey: server.apiKey || null, pid: null, insecure: server.insecure === true };
}
