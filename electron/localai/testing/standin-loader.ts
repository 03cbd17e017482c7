// The stand-in's model loader, after LocalAI's pkg/model: one real gRPC backend process per loaded model, readiness by
// Health attempts, reuse for as long as the process lives, a growing cooldown after failed loads, and the stops.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, closeSync, openSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BackendCallError, BackendClient } from '../../core/supervisor/grpc-client.ts';
import type { StandInServerOptions } from './standin-server.ts';

/** A passed health check is trusted this long (healthCheckTTL). */
const HEALTH_TTL_MS = 30_000;
/** One readiness Health call (HealthCheck's own timeout). */
const READINESS_CALL_MS = 10_000;
/** checkIsLoaded's Health call. */
const LOADED_CHECK_MS = 2 * 60_000;
/** Free before a shutdown stops the process (backendFreeTimeout). */
const FREE_MS = 5_000;
/** go-processmanager's Stop: SIGTERM to the group, polled, SIGKILL after the grace. */
const STOP_GRACE_MS = 15_000;
const STOP_POLL_MS = 100;
/** LocalAI puts no deadline on LoadModel, Predict and Status; a test should not hang forever either. */
export const CALL_MS = 10 * 60_000;
const MAX_COOLDOWN_MS = 5 * 60_000;
/** pkg/model/initializers.go's Aliases: names a model's config may give, and the backend each loads. */
const BACKEND_ALIASES: Readonly<Record<string, string>> = {
  'go-llama': 'llama-cpp',
  llama: 'llama-cpp',
  'embedded-store': 'local-store',
  'huggingface-embeddings': 'transformers',
  'transformers-musicgen': 'transformers',
  sentencetransformers: 'transformers',
  mamba: 'transformers',
  stablediffusion: 'stablediffusion-ggml',
};
/** Go's names for gRPC codes, as `rpc error: code = … desc = …` spells them. */
const GO_CODES = ['OK', 'Canceled', 'Unknown', 'InvalidArgument', 'DeadlineExceeded', 'NotFound', 'AlreadyExists', 'PermissionDenied', 'ResourceExhausted', 'FailedPrecondition', 'Aborted', 'OutOfRange', 'Unimplemented', 'Internal', 'Unavailable', 'DataLoss', 'Unauthenticated'];

interface BackendProcess {
  child: ChildProcess;
  pid: number;
  address: string;
  stderrPath: string;
  exited: Promise<void>;
}

export interface LoadedModel {
  client: BackendClient;
  /** Null when the registered run file was not a file and its path was dialled as an address, as LocalAI does. */
  process: BackendProcess | null;
  healthyAt: number;
}

export class CooldownError extends Error {
  constructor(
    id: string,
    readonly retryAfterMs: number,
  ) {
    super(`model ${JSON.stringify(id)} load is in cooldown after a recent failure; retry after ${goSeconds(retryAfterMs)}`);
  }
}

export class ModelNotFoundError extends Error {
  constructor() {
    super('model not found');
  }
}

export class ModelLoader {
  /** externalBackends: name → run file. Registrations only add; a delete job removes its exact name. */
  readonly externalBackends = new Map<string, string>();
  private stateRoot = '';
  private closed = false;
  private spawnCount = 0;
  private readonly store = new Map<string, LoadedModel>();
  private readonly loading = new Map<string, Promise<LoadedModel>>();
  private readonly shutdowns = new Map<string, Promise<void>>();
  private readonly loadFailures = new Map<string, { consecutive: number; until: number }>();
  private readonly children = new Set<BackendProcess>();

  constructor(private readonly options: Pick<StandInServerOptions, 'backendsDir' | 'models' | 'healthAttempts' | 'healthIntervalMs' | 'loadFailureCooldownMs'>) {}

  get spawned(): number {
    return this.spawnCount;
  }

  pids(): Map<string, number> {
    return new Map([...this.store].flatMap(([id, model]) => (model.process ? [[id, model.process.pid] as const] : [])));
  }

  loadedIds(): string[] {
    return [...this.store.keys()];
  }

  async start(): Promise<void> {
    this.stateRoot = await mkdtemp(join(tmpdir(), 'standin-server-'));
  }

  /** From here on no backend process starts. */
  close(): void {
    this.closed = true;
  }

  async stopAll(): Promise<void> {
    // LocalAI's graceful termination: StopAllGRPC shuts each loaded model down (Free, then the stop).
    for (const id of [...this.store.keys()]) await this.shutdownModel(id).catch(() => undefined);
    await Promise.all([...this.children].map((proc) => this.stopProcess(proc)));
  }

  async killAll(): Promise<void> {
    for (const proc of this.children) signalGroup(proc.pid, 'SIGKILL');
    await Promise.all([...this.children].map((proc) => proc.exited));
  }

  async removeState(): Promise<void> {
    await rm(this.stateRoot, { recursive: true, force: true });
  }

  /** ModelLoader.Load: reuse what checkIsLoaded keeps, honour the failure cooldown, coalesce concurrent loads. */
  async load(id: string, checkCooldown = true): Promise<LoadedModel> {
    const loaded = (await this.checkIsLoaded(id)) ?? this.store.get(id);
    if (loaded) return loaded;
    const failure = this.loadFailures.get(id);
    if (checkCooldown && failure && failure.until > Date.now()) throw new CooldownError(id, failure.until - Date.now());
    const pending = this.loading.get(id);
    if (pending) {
      await pending.catch(() => undefined);
      // The leader failed: retry once as part of this burst, past the cooldown it just started.
      return (await this.checkIsLoaded(id)) ?? this.load(id, false);
    }
    const leading = this.lead(id);
    this.loading.set(id, leading);
    try {
      return await leading;
    } finally {
      this.loading.delete(id);
    }
  }

  private async lead(id: string): Promise<LoadedModel> {
    let model: LoadedModel;
    try {
      model = await this.startModel(id);
    } catch (error) {
      this.recordLoadFailure(id);
      throw new Error(`failed to load model with internal loader: ${(error as Error).message}`);
    }
    this.loadFailures.delete(id);
    this.store.set(id, model);
    return model;
  }

  private recordLoadFailure(id: string): void {
    const base = this.options.loadFailureCooldownMs ?? 10_000;
    if (base <= 0) return;
    const consecutive = (this.loadFailures.get(id)?.consecutive ?? 0) + 1;
    const backoff = Math.min(base * 2 ** Math.min(consecutive - 1, 20), MAX_COOLDOWN_MS);
    this.loadFailures.set(id, { consecutive, until: Date.now() + backoff });
  }

  /**
   * checkIsLoaded: a model that passed a health check in the last 30 s is reused as is; otherwise Health is asked, and
   * only a process that is no longer alive gets the model evicted. A live process that fails Health is reused.
   */
  async checkIsLoaded(id: string): Promise<LoadedModel | null> {
    await this.shutdowns.get(id);
    const model = this.store.get(id);
    if (!model) return null;
    if (Date.now() - model.healthyAt < HEALTH_TTL_MS) return model;
    const healthy = await model.client.health(LOADED_CHECK_MS).then((answer) => answer === 'OK', () => false);
    if (!healthy && model.process && !isAlive(model.process.pid)) {
      await this.deleteProcess(id, true);
      return null;
    }
    model.healthyAt = Date.now();
    return model;
  }

  /**
   * backendLoader + grpcModel: the config's backend lower-cased and put through the alias map, then the registered
   * run file, readiness by Health attempts, then LoadModel.
   */
  private async startModel(id: string): Promise<LoadedModel> {
    const lower = this.options.models[id]!.toLowerCase();
    const backend = BACKEND_ALIASES[lower] ?? lower;
    const runFile = this.externalBackends.get(backend);
    if (!runFile) throw new Error(`backend not found: ${backend}`);
    const proc = (await isFile(runFile)) ? await this.startProcess(runFile) : null;
    const client = new BackendClient(proc?.address ?? runFile);
    try {
      if (!(await this.waitHealthy(client))) throw startupError(proc);
      const modelPath = resolve(this.options.backendsDir, '..', 'models');
      const result = await client.loadModel({ model: id, modelFile: join(modelPath, id), modelPath }, CALL_MS).catch((error: unknown) => {
        throw new Error(`could not load model: ${grpcText(error)}`);
      });
      if (!result.success) throw new Error(`could not load model (no success): ${result.message}`);
    } catch (error) {
      client.close();
      if (proc) await this.stopProcess(proc);
      throw error;
    }
    return { client, process: proc, healthyAt: 0 };
  }

  /** LocalAI's readiness loop: up to `attempts` Health calls, a fixed sleep after each one that fails. */
  private async waitHealthy(client: BackendClient): Promise<boolean> {
    for (let attempt = 0; attempt < (this.options.healthAttempts ?? 20); attempt++) {
      if (await client.health(READINESS_CALL_MS).then((answer) => answer === 'OK', () => false)) return true;
      await sleep(this.options.healthIntervalMs ?? 2_000);
    }
    return false;
  }

  /** startProcess: `run.sh --addr 127.0.0.1:PORT` from the backend's directory, its output in a state dir. */
  private async startProcess(runFile: string): Promise<BackendProcess> {
    if (this.closed) throw new Error('stand-in server stopped');
    if (((await stat(runFile)).mode & 0o111) === 0) chmodSync(runFile, 0o700);
    const address = `127.0.0.1:${await freePort()}`;
    const stateDir = await mkdtemp(join(this.stateRoot, 'go-processmanager'));
    const stdout = openSync(join(stateDir, 'stdout'), 'w');
    const stderr = openSync(join(stateDir, 'stderr'), 'w');
    // Unset so the echo backend exits once its parent is gone, as LocalAI's backends do.
    const { LOCALAI_BACKEND_PARENT_WATCH: _parentWatch, ...env } = process.env;
    const child = spawn(runFile, ['--addr', address], {
      cwd: resolve(dirname(runFile)),
      detached: true,
      stdio: ['ignore', stdout, stderr],
      env: { ...env, HANGAR_NODE: process.execPath },
    });
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    try {
      await once(child, 'spawn');
    } finally {
      closeSync(stdout);
      closeSync(stderr);
    }
    const proc: BackendProcess = { child, pid: child.pid!, address, stderrPath: join(stateDir, 'stderr'), exited };
    this.spawnCount++;
    this.children.add(proc);
    void exited.then(() => this.children.delete(proc));
    return proc;
  }

  private async stopProcess(proc: BackendProcess): Promise<void> {
    signalGroup(proc.pid, 'SIGTERM');
    const deadline = Date.now() + STOP_GRACE_MS;
    while (isAlive(proc.pid) && Date.now() < deadline) await sleep(STOP_POLL_MS);
    if (isAlive(proc.pid)) signalGroup(proc.pid, 'SIGKILL');
    await proc.exited;
  }

  /** ShutdownModel, serialised per model: what checks the model meanwhile waits and finds it gone. */
  async shutdownModel(id: string): Promise<void> {
    const stopping = this.deleteProcess(id, false);
    this.shutdowns.set(id, stopping.catch(() => undefined));
    try {
      await stopping;
    } finally {
      this.shutdowns.delete(id);
    }
  }

  /** deleteProcess: a bounded Free (skipped when forced), the process stop, then the store entry goes. */
  private async deleteProcess(id: string, force: boolean): Promise<void> {
    const model = this.store.get(id);
    if (!model) throw new ModelNotFoundError();
    if (!force) await model.client.free(FREE_MS).catch(() => undefined);
    if (model.process) await this.stopProcess(model.process);
    this.store.delete(id);
    model.client.close();
  }
}

/** A gRPC failure as Go's status error prints it. */
export function grpcText(error: unknown): string {
  if (error instanceof BackendCallError) return `rpc error: code = ${GO_CODES[error.grpcCode] ?? `Code(${error.grpcCode})`} desc = ${error.details}`;
  return (error as Error).message;
}

/** grpcStartupError: a process that exited says how, with its last stderr line. */
function startupError(proc: BackendProcess | null): Error {
  const child = proc?.child;
  if (!child || (child.exitCode === null && child.signalCode === null)) return new Error('grpc service not ready');
  const code = child.exitCode ?? -1;
  const lines = readFileSync(proc.stderrPath, 'utf8').trim().split('\n');
  const last = lines[lines.length - 1]!.trim();
  return new Error(`grpc service not ready: backend process exited with code ${code}${last ? `: ${last}` : ''}`);
}

/** Go's Duration.Round(time.Second).String(). */
function goSeconds(ms: number): string {
  const total = Math.round(ms / 1000);
  const [hours, minutes, seconds] = [Math.floor(total / 3600), Math.floor((total % 3600) / 60), total % 60];
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  return minutes > 0 ? `${minutes}m${seconds}s` : `${seconds}s`;
}

/** freeport.GetFreePort: a port the OS hands a listening socket, released at once. */
async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((done) => server.close(done));
  return port;
}

/** IsAlive: signal 0 to the pid. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is already gone.
  }
}

export async function isFile(path: string): Promise<boolean> {
  return stat(path).then((s) => s.isFile(), () => false);
}
