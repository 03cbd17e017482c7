// LocalAI run by Hangar (`hangar localai …`): installed from LocalAI's releases with its checksum, started as
// `local-ai run` on 127.0.0.1 on this node's backends directory, ready when /readyz answers, restarted after a crash by
// the backends' restart policy, linked as the server beside the node, upgraded and rolled back as a gated swap.
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { HangarError } from '../../../shared/errors.ts';
import type { LocalAiAction, LocalAiCancel, LocalAiOperation, LocalAiRunState, LocalAiRunView } from '../../../shared/types.ts';
import { KeyedLock } from '../../core/locks.ts';
import { guardedFetch, type TransferLimits } from '../../core/net/index.ts';
import { DEFAULT_RESTART_RULES, portIsFree, type RestartHistory, RestartScheduler } from '../../core/supervisor/index.ts';
import { LocalAiServerApi } from '../server/api.ts';
import { concreteBackend } from '../server/backend-names.ts';
import { withLoadNote } from '../server/load-note.ts';
import type { BackendMarks, MarkCheck } from './backend-marks.ts';
import { API_KEY_FILE, localAiApiKey } from './api-key.ts';
import { binaryProblem } from './binary-check.ts';
import { Builds, type InstalledBuild } from './builds.ts';
import { downloadRelease } from './download.ts';
import { gatedSwap, StartFailed } from './gated-swap.ts';
import { launchLocalAi, leftoversText, DEFAULT_STOP_GRACE, type Ended, type LocalAiProcess } from './launch.ts';
import { leftRunningText, noteRunning, noteStopped, stopLeftRunning, type LeftRunning } from './left-running.ts';
import { LogLines } from './log-lines.ts';
import { Operations, type OperationContext } from './operations.ts';
import { endText, waitReady } from './readiness.ts';
import { DEFAULT_RELEASES, isOlder, latestRelease, releaseFiles, wantedRelease } from './release.ts';
import { freePort } from './free-port.ts';
import { oneLine } from '../../../shared/error-text.ts';

export interface LocalAiRunnerOptions {
  home: string;
  /** This node's backends directory, given to LocalAI as --backends-path. */
  backendsPath: string;
  /** --localai-models (default `<home>/models`). */
  modelsPath?: string | undefined;
  /** --localai-bin: a binary already on the machine, used as it is. */
  binary?: string | undefined;
  /** --localai-releases: where releases are fetched from (default https://github.com). */
  releases?: string | undefined;
  transfer?: Partial<TransferLimits> | undefined;
  /** How long a start may take to answer /readyz (the agent's --start-timeout). */
  readyTimeoutMs?: number | undefined;
  /** How long one noted model may take to load again after a swap (the agent's --localai-reload-wait). */
  loadTimeoutMs?: number | undefined;
  /** Told when LocalAI is ready (to link it); says how the link stands. */
  onReady?(server: { url: string; apiKey: string; pid: number }): Promise<string>;
  /** Told once models were loaded again, before the operation ends: what it says is then what a listing shows. */
  onModelsLoaded?(): Promise<unknown>;
  /** The backends LocalAI's gallery marks for upgrade, checked again by `check` whenever LocalAI's version changes. */
  marks?: { store: BackendMarks; check: MarkCheck } | undefined;
  /** Where its state changes are said (default: the agent's stderr). */
  log?(line: string): void;
}

const KEY = 'localai';
const DEFAULT_READY_TIMEOUT_MS = 10 * 60_000;
const DEFAULT_LOAD_TIMEOUT_MS = 10 * 60_000;
const FAILURE_TAIL = 20;
/** How long the LocalAI a previous agent left running may take to say which models it has loaded. */
const LEFT_SYSTEM_TIMEOUT_MS = 3000;

export class LocalAiRunner {
  private readonly builds: Builds;
  private readonly logs = new LogLines(() => this.apiKey);
  private readonly serial = new KeyedLock();
  private readonly restarts: RestartScheduler;
  private readonly history: RestartHistory = { quickEnds: 0, backoffMs: 0 };
  private readonly fetch: typeof fetch;
  private apiKey: string | null = null;
  private process: LocalAiProcess | null = null;
  /** The process the restart policy watches: one that got ready, or one a crash restart started. */
  private supervised: LocalAiProcess | null = null;
  private state: LocalAiRunState = 'stopped';
  private port: number | null = null;
  private reportedVersion: string | null = null;
  private restartCount = 0;
  private lastExit: string | null = null;
  private link: string | null = null;
  private readonly operations = new Operations();
  private closed = false;
  /** Where the log stood when the last start began: the lines after it are that process's. */
  private startMark = 0;
  private failedStart: LocalAiRunView['failedStart'] = null;
  /** The LocalAI a previous agent left running, stopped by `load`: started again by `launch`. */
  private left: LeftRunning | null = null;
  /** Aborted by a stop or restart asked for while LocalAI starts: its wait for /readyz ends then. */
  private starting: AbortController | null = null;

  constructor(private readonly options: LocalAiRunnerOptions) {
    this.builds = new Builds(join(options.home, 'localai'));
    this.restarts = new RestartScheduler(DEFAULT_RESTART_RULES);
    this.fetch = guardedFetch(fetch, options.transfer);
  }

  /** Reads the builds, and stops a LocalAI a previous agent left running (before anything links it). */
  async load(): Promise<void> {
    await this.builds.load();
    const key = await readFile(join(this.options.home, 'state', API_KEY_FILE), 'utf8').catch(() => '');
    const loaded = async (url: string) => (await new LocalAiServerApi(url, key.trim() || null).system(AbortSignal.timeout(LEFT_SYSTEM_TIMEOUT_MS))).loaded.map((m) => m.id);
    this.left = await stopLeftRunning(this.builds.dir, DEFAULT_STOP_GRACE.interruptMs, loaded);
    if (this.left) this.say(leftRunningText(this.left));
  }

  /**
   * At the host's start, once it serves: LocalAI again when the previous agent died with it running (its models
   * loaded again), or when it starts with the agent (localai-autostart).
   */
  async launch(autostart: boolean): Promise<void> {
    const left = this.left;
    this.left = null;
    if (!left && !autostart) return;
    await this.serial.run(KEY, async () => {
      if (left?.url) this.port ??= Number(new URL(left.url).port) || null;
      await this.startNow(false);
      if (left && left.models.length > 0) this.say(await this.loadAgain(left.models));
    });
  }

  view(): LocalAiRunView {
    const build = this.builds.inUse();
    const binary = this.options.binary ?? build?.path ?? null;
    return {
      state: binary === null ? 'not-installed' : this.state,
      pid: this.process?.pid ?? null,
      version: this.options.binary ? this.reportedVersion : (build?.tag ?? null),
      previousVersion: this.options.binary ? null : (this.builds.kept()?.tag ?? null),
      url: this.process && this.state !== 'stopped' ? this.process.url : null,
      binary,
      fixedBinary: this.options.binary !== undefined,
      modelsPath: this.modelsPath,
      backendsPath: this.options.backendsPath,
      processes: this.process?.processes() ?? 0,
      restarts: this.restartCount,
      lastExit: this.lastExit,
      // How the link stood when it last started: said only while that process runs.
      link: this.process && this.state !== 'stopped' ? this.link : null,
      operation: this.operations.view(),
      failedStart: this.failedStart && { ...this.failedStart, logTail: [...this.failedStart.logTail] },
      refused: this.operations.refused(),
      marked: this.options.marks?.store.list() ?? [],
    };
  }

  logLines(count?: number): string[] {
    return this.logs.last(count);
  }

  control(action: LocalAiAction): Promise<LocalAiRunView> {
    this.operations.refuseBusy();
    // A stop takes effect now, not after a wait for /readyz that may last minutes (a first start's downloads).
    if (action !== 'start') this.starting?.abort(`hangar localai ${action} was asked for`);
    return this.serial.run(KEY, async () => {
      if (action !== 'start') await this.stopNow();
      if (action === 'stop') return this.view();
      this.restartCount = 0;
      Object.assign(this.history, { quickEnds: 0, backoffMs: 0 });
      await this.startNow(false);
      return this.view();
    });
  }

  latest(): Promise<string> {
    return latestRelease(this.releases, this.fetch);
  }

  /**
   * Installs `version` (default the latest); over a running LocalAI, as a gated swap. `as`: what the user asked for,
   * as its operation is named (default: an upgrade when a build is installed).
   */
  async install(version?: string, as?: 'install' | 'upgrade'): Promise<LocalAiRunView> {
    this.refuseFixed('install');
    const wanted = wantedRelease(version);
    const kind = as ?? (this.builds.inUse() ? 'upgrade' : 'install');
    await this.operate(kind, async ({ signal, phase, ifCancelled, commit }) => {
      phase('finding the release');
      const tag = wanted ?? (await latestRelease(this.releases, this.fetch, signal, 'nothing was installed'));
      const before = this.builds.inUse();
      if (before?.tag === tag) return `LocalAI ${tag} is already installed`;
      const asked = `cancelled the LocalAI ${kind === 'upgrade' ? `upgrade to ${tag}` : `install of ${tag}`}`;
      ifCancelled(before ? `${asked}: LocalAI ${before.tag} ${this.process ? 'runs' : 'stays'} as it was` : `${asked}: nothing was installed`);
      phase(`downloading LocalAI ${tag}`);
      await mkdir(this.builds.dir, { recursive: true });
      const progress = (bytes: number, total: number | null) => phase(`downloading LocalAI ${tag}: ${total ? `${Math.floor((bytes / total) * 100)}%` : `${bytes} bytes`}`);
      const build = await downloadRelease(releaseFiles(this.releases, tag), this.builds.dir, this.fetch, progress, undefined, signal);
      this.operations.accepted(tag);
      commit();
      if (!before) {
        await this.builds.use(build);
        return `LocalAI ${tag} installed (sha256 ${build.sha256.slice(0, 12)}… checked) in ${this.builds.dir}`;
      }
      return this.swapTo(build, `LocalAI ${before.tag} → ${tag}${isOlder(tag, before.tag) ? ' (a downgrade)' : ''}`, phase);
    });
    return this.view();
  }

  async rollback(): Promise<LocalAiRunView> {
    this.refuseFixed('roll back');
    await this.operate('rollback', async ({ phase, commit }) => {
      const back = this.builds.kept();
      if (!back) throw new HangarError('conflict', 'no previous LocalAI build is kept: nothing to roll back to');
      commit();
      return this.swapTo(back, `LocalAI ${this.builds.inUse()?.tag ?? '?'} → ${back.tag} (rollback)`, phase);
    });
    return this.view();
  }

  /** Cancels the install, upgrade or rollback under way, unless its swap has begun. */
  cancel(): Promise<LocalAiCancel> {
    return this.operations.cancel();
  }

  /** Stops LocalAI for good (the agent is leaving): no restart follows. */
  async close(): Promise<void> {
    this.closed = true;
    this.restarts.close();
    this.starting?.abort('the agent is stopping');
    await this.operations.close();
    await this.serial.run(KEY, () => this.stopNow());
  }

  private get modelsPath(): string {
    return this.options.modelsPath ?? join(this.options.home, 'models');
  }

  private get releases(): string {
    return this.options.releases ?? DEFAULT_RELEASES;
  }

  private refuseFixed(what: string): void {
    if (this.options.binary) throw new HangarError('conflict', `this agent runs the LocalAI binary it was given (--localai-bin ${this.options.binary}): it does not ${what} LocalAI`);
  }

  private async swapTo(build: InstalledBuild, what: string, phase: (text: string) => void): Promise<string> {
    const before = this.builds.snapshot();
    const backendOf = new Map<string, string | null>();
    return gatedSwap({
      running: () => this.process !== null,
      loadedModels: async () =>
        (await this.api().system()).loaded.map((m) => {
          backendOf.set(m.id, m.backend);
          return m.id;
        }),
      stop: () => this.stopNow(),
      swap: () => this.builds.use(build),
      swapBack: () => this.builds.restore(before),
      start: () => this.startNow(false),
      load: (model) =>
        this.api()
          .load(model, this.options.loadTimeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS)
          .catch((error: unknown) => {
            throw withLoadNote(error, model, this.markNote(backendOf.get(model) ?? null));
          }),
      logTail: () => this.logs.since(this.startMark, FAILURE_TAIL),
      phase,
    }, what).finally(async () => {
      this.builds.prune();
      await this.options.onModelsLoaded?.().catch(() => undefined);
    });
  }

  /** Runs an install, upgrade or rollback in its turn, as the view's operation. */
  private operate(kind: LocalAiOperation['kind'], work: (context: OperationContext) => Promise<string>): Promise<void> {
    return this.operations.run(kind, (next) => this.serial.run(KEY, next), work, (line) => this.say(line));
  }

  /** Loads `models` again on the LocalAI that runs now; says which did and which did not. */
  private async loadAgain(models: string[]): Promise<string> {
    const loaded: string[] = [];
    const failed: string[] = [];
    for (const model of models) {
      await this.api()
        .load(model, this.options.loadTimeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS)
        .then(() => loaded.push(model), (error: unknown) => failed.push(`${model} (${oneLine(error)})`));
    }
    await this.options.onModelsLoaded?.().catch(() => undefined);
    return [loaded.length > 0 && `models loaded again: ${loaded.join(', ')}`, failed.length > 0 && `not loaded again: ${failed.join('; ')}`].filter(Boolean).join('; ');
  }

  private api(): LocalAiServerApi {
    if (!this.process) throw new HangarError('conflict', 'LocalAI is not running');
    return new LocalAiServerApi(this.process.url, this.apiKey);
  }

  /**
   * Starts LocalAI and waits for /readyz; a failed start leaves it stopped and says why with its last lines.
   * `afterCrash`: a restart by the policy, whose failed start the policy goes on judging.
   */
  private async startNow(afterCrash: boolean): Promise<void> {
    if (this.process) return;
    if (this.closed) throw new HangarError('conflict', 'the agent is stopping');
    const binary = this.options.binary ?? this.builds.inUse()?.path;
    if (!binary) throw new HangarError('conflict', 'LocalAI is not installed: hangar localai install (or hangar agent --localai-bin PATH)');
    const problem = await binaryProblem(binary, this.options.binary ? 'hangar agent --localai-bin' : 'installed by Hangar, then removed');
    if (problem) throw problem;
    this.restarts.cancel(KEY);
    // Made at the first start, not with the agent: an agent that never runs LocalAI writes nothing for it.
    this.apiKey ??= await localAiApiKey(join(this.options.home, 'state'));
    this.port = this.port !== null && (await portIsFree(this.port)) ? this.port : await freePort();
    await Promise.all([mkdir(this.modelsPath, { recursive: true }), mkdir(this.options.backendsPath, { recursive: true }), mkdir(this.builds.dir, { recursive: true })]);
    this.state = 'starting';
    // The link made with the process before is no word on this one until it is ready and linked in turn.
    this.link = null;
    const mark = (this.startMark = this.logs.mark());
    const proc = await launchLocalAi({ binary, port: this.port, backendsPath: this.options.backendsPath, modelsPath: this.modelsPath, apiKey: this.apiKey!, cwd: this.builds.dir, logs: this.logs }).catch((error: Error) => {
      this.state = 'stopped';
      throw new HangarError('failed', error.message);
    });
    this.process = proc;
    if (afterCrash) this.supervised = proc;
    this.logs.note(`started ${binary} (pid ${proc.pid}) on ${proc.url}`);
    await noteRunning(this.builds.dir, proc);
    void proc.ended.then((ended) => this.ended(proc, ended));
    const starting = (this.starting = new AbortController());
    const readiness = await waitReady(proc.url, proc.ended, this.options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS, starting.signal);
    this.starting = null;
    if (!readiness.ready) {
      const tail = this.logs.since(mark, FAILURE_TAIL);
      if (!(afterCrash && this.process !== proc)) await this.stopNow();
      if (starting.signal.aborted) throw new HangarError('failed', `LocalAI's start was cancelled before it was ready: ${String(starting.signal.reason)}`);
      this.failedStart = { at: new Date().toISOString(), why: readiness.why, logTail: tail };
      throw new StartFailed(readiness.why, tail);
    }
    this.supervised = proc;
    this.state = 'ready';
    this.failedStart = null;
    this.say(`LocalAI ready on ${proc.url} (pid ${proc.pid})`);
    await this.afterReady(proc);
  }

  private async afterReady(proc: LocalAiProcess): Promise<void> {
    const api = new LocalAiServerApi(proc.url, this.apiKey);
    // LocalAI's /version says "v3.1.0 (COMMIT)": the tag is what the view compares with releases.
    if (this.options.binary) this.reportedVersion = (await api.version().catch(() => null))?.split(' ')[0] ?? null;
    if (this.options.onReady) this.link = await this.options.onReady({ url: proc.url, apiKey: this.apiKey!, pid: proc.pid }).catch((error: unknown) => `not linked: ${oneLine(error)}`);
    await this.checkMarks();
  }

  /** After a change of LocalAI's version, before any model is loaded on it: which backends its gallery marks. */
  private async checkMarks(): Promise<void> {
    const version = this.view().version;
    const marks = this.options.marks;
    if (!marks || !version) return;
    const said = await marks.store.ran(version, marks.check).catch((error: unknown) => `LocalAI ${version}: could not check its backends for upgrades: ${oneLine(error)}`);
    if (said) this.say(said);
  }

  /** What a failed load of a model on `backend` (as LocalAI names it) says of its mark, if it has one. */
  private markNote(backend: string | null): string | null {
    if (!backend || !this.options.marks) return null;
    return this.options.marks.store.loadNote(backend, concreteBackend(this.options.backendsPath, backend));
  }

  private async stopNow(): Promise<void> {
    this.restarts.cancel(KEY);
    const proc = this.process;
    if (!proc) {
      this.state = 'stopped';
      return;
    }
    this.state = 'stopping';
    this.process = null;
    const ended = await proc.stop();
    this.logs.note(`LocalAI (pid ${proc.pid}) stopped (${endText(ended)})${leftoversText(await proc.killLeftovers())}`);
    await noteStopped(this.builds.dir);
    this.state = 'stopped';
  }

  /** Its process ended: by a stop (nothing to do), or by itself (a crash, restarted by the policy). */
  private ended(proc: LocalAiProcess, ended: Ended): void {
    if (this.process !== proc) return;
    this.process = null;
    const lastExit = `${endText(ended)} after ${(ended.uptimeMs / 1000).toFixed(1)} s`;
    void proc.killLeftovers().then((count) => this.logs.note(`LocalAI (pid ${proc.pid}) ended by itself: ${lastExit}${leftoversText(count)}`));
    // One that ends during a start asked for is that start's failure, said to whoever asked: not a crash of the
    // LocalAI that runs (a broken build in a swap), so not its last end either.
    if (this.supervised !== proc) return;
    this.lastExit = lastExit;
    const failed = ended.code !== 0 || ended.signal !== null;
    this.state = 'crashed';
    const verdict = this.restarts.afterEnd(KEY, { policy: 'on-failure' }, failed, ended.uptimeMs, this.history, () => void this.restartAfterCrash());
    if (verdict && 'stay' in verdict) {
      this.state = verdict.stay === 'loop' ? 'crash-looping' : 'stopped';
      this.say(verdict.stay === 'loop' ? `LocalAI ended ${verdict.ends} times in a row soon after its start: left stopped (crash-looping); hangar localai start starts it again` : `LocalAI ended (${this.lastExit})`);
    } else this.say(`LocalAI crashed (${this.lastExit}): restarting`);
  }

  private async restartAfterCrash(): Promise<void> {
    await this.serial
      .run(KEY, async () => {
        if (this.state !== 'crashed') return;
        this.restartCount++;
        await this.startNow(true);
      })
      .catch((error: unknown) => this.say(`LocalAI restart failed: ${oneLine(error).split('\n')[0]}`));
  }

  private say(line: string): void {
    this.logs.note(line);
    (this.options.log ?? ((text: string) => process.stderr.write(`hangar: ${text}\n`)))(line);
  }
}
