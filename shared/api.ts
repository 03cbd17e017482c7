import type {
  BackendView,
  GalleryEntryView,
  JobView,
  LoadResult,
  LogLine,
  NodeEvent,
  NodeInfo,
  ProcessView,
  RestartPolicy,
  ScanEntry,
  UpgradeAllResult,
} from './types.ts';

// Every call names its node ("local" is this machine) so a cluster transport needs no new contract.
export interface NodeRef { node: string }
export interface BackendRef extends NodeRef { name: string }
export interface ModelRef extends NodeRef { model: string }

/** One interface for every host and transport: the core implements it, Electron IPC and WebSocket carry it. */
export interface NodeApi {
  info(req: NodeRef): Promise<NodeInfo>;
  gallery(req: NodeRef & { refresh?: boolean }): Promise<GalleryEntryView[]>;
  backends(req: NodeRef): Promise<BackendView[]>;
  processes(req: NodeRef): Promise<ProcessView[]>;
  jobs(req: NodeRef): Promise<JobView[]>;
  /** Jobs return at once; follow them with `job` events or `waitJob`. */
  install(req: BackendRef & { force?: boolean }): Promise<JobView>;
  upgrade(req: BackendRef): Promise<JobView>;
  upgradeAll(req: NodeRef): Promise<UpgradeAllResult[]>;
  rollback(req: BackendRef): Promise<JobView>;
  /** Picks which build of a meta backend this node installs (`capability` null: the automatic choice again). */
  chooseVariant(req: BackendRef & { capability: string | null }): Promise<GalleryEntryView>;
  delete(req: BackendRef): Promise<JobView>;
  waitJob(req: NodeRef & { id: string }): Promise<JobView>;
  cancelJob(req: NodeRef & { id: string }): Promise<JobView>;
  /** `restart`: what happens when the process ends by itself (default: kept, else on-failure). */
  load(req: NodeRef & { backend: string; model: string; restart?: RestartPolicy }): Promise<LoadResult>;
  respawn(req: ModelRef): Promise<ProcessView>;
  /** Starts an exited or crashed model's process again and reloads its model (a live one is respawned). */
  restart(req: ModelRef): Promise<ProcessView>;
  respawnBackend(req: BackendRef): Promise<ProcessView[]>;
  stop(req: ModelRef): Promise<void>;
  scan(req: NodeRef): Promise<ScanEntry[]>;
  logs(req: ModelRef): Promise<LogLine[]>;
}

export type NodeMethod = keyof NodeApi;
export type NodeRequest<M extends NodeMethod> = Parameters<NodeApi[M]>[0];

/** What a host offers a renderer: the node API plus a live event feed. */
export interface HangarBridge extends NodeApi {
  /** Returns an unsubscribe function. */
  onEvent(listener: (event: NodeEvent) => void): () => void;
}

export const LOCAL_NODE = 'local';

/** Every NodeApi method name. The compiler checks the list is complete; transports derive their channels from it. */
export const nodeMethods = [
  'info', 'gallery', 'backends', 'processes', 'jobs', 'install', 'upgrade', 'upgradeAll', 'rollback', 'chooseVariant', 'delete',
  'waitJob', 'cancelJob', 'load', 'respawn', 'restart', 'respawnBackend', 'stop', 'scan', 'logs',
] as const satisfies readonly NodeMethod[];

type Unlisted = Exclude<NodeMethod, (typeof nodeMethods)[number]>;
const everyMethodListed: [Unlisted] extends [never] ? true : Unlisted = true;
void everyMethodListed;

/** A bridge whose every method forwards to `call`: one place turns a transport into the NodeApi shape. */
export function bridgeFrom(
  call: (method: NodeMethod, params: unknown) => Promise<unknown>,
  onEvent: HangarBridge['onEvent'],
): HangarBridge {
  const api = Object.fromEntries(nodeMethods.map((method) => [method, (params: unknown) => call(method, params)]));
  return { ...(api as unknown as NodeApi), onEvent };
}
