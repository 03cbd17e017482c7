// One machine's node behind the NodeApi contract: the façade that composes the gallery, the installed backends, the
// supervisor and the jobs (node/ holds its parts), and turns what they do into events.
import { EventEmitter } from 'node:events';
import { mkdir } from 'node:fs/promises';
import { arch, platform } from 'node:os';
import { join } from 'node:path';
import type { BackendRef, GatedSwapOptions, LeftoverAction, ModelRef, NodeApi, NodeRef, SwapOptions } from '../../shared/api.ts';
import { HangarError } from '../../shared/errors.ts';
import type {
  BackendView,
  GalleryEntryView,
  JobView,
  LoadResult,
  LogLine,
  NodeCounts,
  NodeEvent,
  NodeInfo,
  NodeSettings,
  ProcessView,
  ResourcesView,
  RestartOptions,
  ScanEntry,
  SettingsView,
  UpgradeAllResult,
} from '../../shared/types.ts';
import { Galleries, VariantChoices, detectCapability } from './gallery/index.ts';
import { BackendStore, LOCALAI_DIR_MODE } from './install/store.ts';
import { builtinSources } from './install/builtin-sources.ts';
import { DigestResolver, ociSource } from './install/oci/index.ts';
import { JobHistory } from './job-history.ts';
import { JobRunner } from './jobs.ts';
import { Snapshots } from './localai-rows.ts';
import { KeyedLock } from './locks.ts';
import { MachineResources } from './machine/resources.ts';
import { machineAddresses } from './machine-addresses.ts';
import { DEFAULT_TRANSFER, guardedFetch } from './net/guarded-fetch.ts';
import { Catalog } from './node/catalog.ts';
import { coRunnerContext } from './node/co-runner.ts';
import { DirectoryChanges } from './node/directory-changes.ts';
import { LiveSettings, fixedSettings } from './node/live-settings.ts';
import { ModelProcesses } from './node/model-processes.ts';
import { BackendNames } from './node/names.ts';
import type { LocalNodeOptions } from './node/options.ts';
import { changeSettings } from './node/settings-change.ts';
import { SwapJobs } from './node/swap-jobs.ts';
import { endInterrupted } from './node/swap-words.ts';
import { SettingsStore } from './settings.ts';
import { removeInterruptedWrites } from './state-file.ts';
import { Supervisor } from './supervisor/index.ts';

export type { LocalNodeOptions };

export const HANGAR_VERSION = '0.1.0';

/** How often tag digests are re-read (LocalAI checks for backend upgrades on the same cadence). */
const DIGEST_REFRESH_MS = 6 * 60 * 60 * 1000;

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
  /** Per backend: a swap takes it alone (`run`), loads and stops of its models share it (`shared`). */
  private readonly locks = new KeyedLock();
  private readonly digests: DigestResolver;
  private readonly settingsStore: SettingsStore;
  private readonly liveSettings: LiveSettings;
  private readonly names: BackendNames;
  private readonly catalog: Catalog;
  private readonly directoryChanges = new DirectoryChanges(
    (name) => this.locks.shared(name, () => this.catalog.publishBackend(name)),
    (name) => this.locks.running(name),
  );
  private readonly swaps: SwapJobs;
  private readonly models: ModelProcesses;
  private readonly machine: MachineResources;

  constructor(private readonly options: LocalNodeOptions) {
    super();
    this.id = options.id ?? 'local';
    this.home = options.home;
    this.backendsDir = join(options.home, 'backends');
    this.modelsDir = join(options.home, 'models');
    this.stateDir = join(options.home, 'state');
    const capability = (this.capability = options.capability ?? detectCapability());
    const fetch = guardedFetch(options.fetch ?? globalThis.fetch, { ...DEFAULT_TRANSFER, ...options.transfer });
    const galleries = (this.galleries = new Galleries({ specs: options.galleries ?? [], fetch, parseCacheDir: join(options.home, 'state', 'gallery-parses') }));
    this.settingsStore = new SettingsStore(this.stateDir, fixedSettings(options, galleries.names()));
    this.digests = new DigestResolver({ fetch, ttlMs: DIGEST_REFRESH_MS });
    const store = (this.store = new BackendStore(this.backendsDir, join(this.stateDir, 'backends-listing.json')));
    const variantChoices = new VariantChoices(join(this.stateDir, 'variants.json'));
    const supervisor = (this.supervisor = new Supervisor({
      ...options.supervisor,
      backendsDir: this.backendsDir,
      modelsDir: this.modelsDir,
      stateDir: this.stateDir,
      logsDir: join(options.home, 'logs'),
      runtimeEnv: options.runtimeEnv,
      backendLock: (backend, work) => this.locks.shared(backend, work),
    }));
    this.machine = new MachineResources({ ...options.resources, backendsDir: this.backendsDir, processes: () => supervisor.list() });
    this.jobHistory = new JobHistory(this.stateDir);
    const runner = (this.jobRunner = new JobRunner(this.id, (job) => this.emitEvent({ type: 'job', node: this.id, job }), this.jobHistory));
    this.liveSettings = new LiveSettings({
      options,
      store: this.settingsStore,
      galleries,
      supervisor,
      autoUpgrade: () => {
        this.digests.refresh();
        void this.autoUpgrade();
      },
    });
    const snapshots = new Snapshots(store, capability);
    const snapshot = () => snapshots.current();
    const names = (this.names = new BackendNames(galleries, snapshot));
    const emit = (event: NodeEvent) => this.emitEvent(event);
    const catalog = (this.catalog = new Catalog({
      node: this.id,
      capability,
      backendsDir: this.backendsDir,
      galleries,
      variantChoices,
      digests: this.digests,
      snapshot,
      processes: () => this.allProcesses(),
      emit,
    }));
    const sources = [...builtinSources, ociSource];
    const smokeStart = () => this.settingsStore.current().smokeStart;
    const coRunnerRespawn = () => this.settingsStore.current().localaiRespawn;
    this.swaps = new SwapJobs({
      runner, home: this.home, capability, galleries, variantChoices, store, sources, fetch, installLimits: options.installLimits, locks: this.locks, supervisor, catalog, names, snapshot, smokeStart,
      coRunner: options.coRunner ?? null, coRunnerRespawn,
    });
    this.models = new ModelProcesses(supervisor, options.coRunner ?? null, this.locks);
    supervisor.on('process', (process: ProcessView) => this.emitEvent({ type: 'process', node: this.id, process }));
    supervisor.on('process-removed', (model: string) => this.emitEvent({ type: 'process-removed', node: this.id, model }));
    supervisor.on('log', (line: LogLine) => this.emitEvent({ type: 'log', node: this.id, line }));
    galleries.on('changed', () => void this.onGalleryChanged());
  }

  /** Creates the home layout, finishes interrupted swaps, re-adopts live backends, lists the jobs kept. */
  async start(): Promise<string[]> {
    await mkdir(this.backendsDir, { recursive: true, mode: LOCALAI_DIR_MODE });
    await Promise.all([this.modelsDir, this.stateDir].map((d) => mkdir(d, { recursive: true })));
    const { done, interrupted } = await this.store.recover();
    const recovered = [...(await removeInterruptedWrites(this.stateDir)), ...done];
    this.store.watch((name) => this.directoryChanges.heard(name));
    await this.settingsStore.load();
    this.liveSettings.apply(['galleries', 'portRange', 'autoUpgrade', 'startTimeoutSec', 'backendStartTimeoutSec']);
    // The galleries are read now, while the rest starts: a large index is parsed in a worker thread meanwhile, and the
    // first client to ask finds it ready.
    void this.galleries.entries().catch(() => undefined);
    // What an interrupted swap stopped runs again, from whichever tree recovery left live.
    const again = interrupted.flatMap((swap) => swap.note?.stopped.map((s) => s.model) ?? []);
    await this.supervisor.start({ restore: this.settingsStore.current().startBackendsOnLaunch, again });
    // The jobs of the last run are listed again; an interrupted swap's own then says how its recovery ended it.
    await this.jobRunner.restore();
    await endInterrupted(this.jobRunner, interrupted);
    this.options.coRunner?.attach(
      coRunnerContext({
        node: this.id,
        backendsDir: this.backendsDir,
        ownPids: () => new Set(this.supervisor.list().map((p) => p.pid)),
        respawnAfterSwap: () => this.settingsStore.current().localaiRespawn,
        shared: (backend, work) => this.locks.shared(backend, work),
        emit: (event) => this.emitEvent(event),
        jobs: this.jobRunner,
        interrupted,
      }),
    );
    return this.settingsStore.problem ? [...recovered, this.settingsStore.problem] : recovered;
  }

  /** What the first start of a backend needs, made ready: for a host that serves and is idle (Supervisor.warmUp). */
  warmUp(): Promise<void> {
    return this.supervisor.warmUp();
  }

  /** How a stop finds all of a backend's processes on this machine (known once started). */
  get processTracking(): string {
    return this.supervisor.tracking.description;
  }

  /** Stops the backends, unless `stopBackends` says otherwise or the settings keep them running. */
  async close(options: { stopBackends?: boolean } = {}): Promise<void> {
    this.liveSettings.close();
    this.galleries.close();
    const unwatched = this.store.unwatch();
    this.directoryChanges.close();
    await this.options.coRunner?.detach();
    await this.supervisor.close({ stopAll: options.stopBackends ?? !this.settingsStore.current().keepBackendsRunning });
    // Records that cannot be written must not block shutdown.
    await Promise.all([this.jobHistory.flush(), this.settingsStore.flush(), unwatched].map((p) => p.catch(() => undefined)));
  }

  async settings(req: NodeRef): Promise<SettingsView> {
    this.check(req);
    return this.settingsStore.view();
  }

  async updateSettings(req: NodeRef & { settings: Partial<NodeSettings>; force?: boolean }): Promise<SettingsView> {
    this.check(req);
    const changed = await changeSettings(req.settings, req.force === true, { store: this.settingsStore, names: this.names, live: this.liveSettings });
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
      galleryProblems: await this.catalog.galleryProblems(),
      version: HANGAR_VERSION,
      processTracking: this.processTracking,
      addresses: machineAddresses(),
    };
  }

  async gallery(req: NodeRef & { refresh?: boolean }): Promise<GalleryEntryView[]> {
    this.check(req);
    if (req.refresh) {
      this.digests.refresh();
      await this.galleries.refresh();
    }
    return this.catalog.entryViews();
  }

  async chooseVariant(req: BackendRef & { capability: string | null }): Promise<GalleryEntryView> {
    this.check(req);
    return this.catalog.chooseVariant(req.name, req.capability);
  }

  async backends(req: NodeRef): Promise<BackendView[]> {
    this.check(req);
    return this.catalog.backends();
  }

  /** What the node's cluster card counts: from the index and the supervisor, never a fresh listing. */
  async counts(): Promise<Omit<NodeCounts, 'drift'>> {
    return this.catalog.counts();
  }

  async processes(req: NodeRef): Promise<ProcessView[]> {
    this.check(req);
    return this.allProcesses();
  }

  /** The supervisor's processes, then the co-runner's models. */
  private allProcesses(): ProcessView[] {
    return [...this.supervisor.list(), ...(this.options.coRunner?.processes() ?? [])];
  }

  async jobs(req: NodeRef): Promise<JobView[]> {
    this.check(req);
    return this.jobRunner.list();
  }

  async install(req: BackendRef & GatedSwapOptions & { force?: boolean }): Promise<JobView> {
    this.check(req);
    return this.swaps.install(req.name, { force: req.force === true, ...gateOptions(req) });
  }

  async upgrade(req: BackendRef & GatedSwapOptions): Promise<JobView> {
    this.check(req);
    return this.swaps.upgrade(req.name, gateOptions(req));
  }

  async upgradeAll(req: NodeRef): Promise<UpgradeAllResult[]> {
    this.check(req);
    return this.swaps.upgradeAll();
  }

  async installVersion(req: BackendRef & GatedSwapOptions & { version: string }): Promise<JobView> {
    this.check(req);
    return this.swaps.installVersion(req.name, req.version, gateOptions(req));
  }

  async resources(req: NodeRef): Promise<ResourcesView> {
    this.check(req);
    return this.machine.current();
  }

  async drain(req: NodeRef): Promise<string[]> {
    this.check(req);
    if (!this.settingsStore.current().cordoned) await this.updateSettings({ node: req.node, settings: { cordoned: true } });
    return this.models.stopAll();
  }

  async rollback(req: BackendRef & GatedSwapOptions): Promise<JobView> {
    this.check(req);
    return this.swaps.rollback(req.name, gateOptions(req));
  }

  async delete(req: BackendRef & SwapOptions): Promise<JobView> {
    this.check(req);
    return this.swaps.delete(req.name, { stopUnsupervised: req.stopUnsupervised === true });
  }

  async resolveLeftover(req: NodeRef & { name: string; action: LeftoverAction }): Promise<void> {
    this.check(req);
    await this.swaps.resolveLeftover(req.name, req.action);
  }

  async waitJob(req: NodeRef & { id: string }): Promise<JobView> {
    this.check(req);
    return this.jobRunner.wait(req.id);
  }

  async cancelJob(req: NodeRef & { id: string }): Promise<JobView> {
    this.check(req);
    return this.jobRunner.cancel(req.id);
  }

  async load(req: NodeRef & { backend: string; model: string } & RestartOptions): Promise<LoadResult> {
    this.check(req);
    return this.models.load(await this.names.target(req.backend), req.model, req);
  }

  async respawn(req: ModelRef): Promise<ProcessView> {
    this.check(req);
    return this.models.respawn(req.model);
  }

  async restart(req: ModelRef): Promise<ProcessView> {
    this.check(req);
    return this.models.restart(req.model);
  }

  async respawnBackend(req: BackendRef): Promise<ProcessView[]> {
    this.check(req);
    return this.models.respawnBackend((await this.names.target(req.name)).name);
  }

  async stop(req: ModelRef): Promise<void> {
    this.check(req);
    await this.models.stop(req.model);
  }

  async unload(req: ModelRef): Promise<ProcessView> {
    this.check(req);
    return this.models.unload(req.model);
  }

  async stopProcess(req: NodeRef & { pid: number }): Promise<void> {
    this.check(req);
    await this.models.stopProcess(req.pid);
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

  private async onGalleryChanged(): Promise<void> {
    this.emitEvent({ type: 'gallery-changed', node: this.id, problems: this.galleries.problems() });
    await this.catalog.publishAll();
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

function gateOptions(req: GatedSwapOptions): { stopUnsupervised: boolean; smokeStart?: boolean } {
  return { stopUnsupervised: req.stopUnsupervised === true, ...(req.smokeStart !== undefined && { smokeStart: req.smokeStart }) };
}
