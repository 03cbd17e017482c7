// A stand-in for `local-ai worker`, written from LocalAI's code (core/services/worker/: lifecycle.go, install.go,
// supervisor.go, models_running.go, registration.go; core/services/messaging/). It registers with the frontend and
// sends heartbeats, answers its NATS subjects with LocalAI's JSON shapes, installs from the gallery as its
// WorkerGallery does, and starts a backend process per model as LocalAI's supervisor starts one (`run.sh --addr
// HOST:PORT`, ports upward from its base port), reported only once its gRPC Health answers OK (LocalAI waits up to
// 30 s, then fails the install). `upgradeHandler: false` is a worker from before backend.upgrade existed,
// `modelStopHandler: false` one from before model.stop.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { BackendClient } from '../../core/supervisor/grpc-client.ts';
import { waitReady } from '../../core/supervisor/readiness.ts';
import { sanitizeSubjectToken, type InstallRequest, type ModelStopRequest } from '../protocol.ts';
import { ProgressPublisher, WorkerGallery } from './standin-worker-gallery.ts';

export interface StandInWorkerOptions {
  name: string;
  nats: string;
  frontend: string;
  registrationToken: string;
  backendsDir: string;
  /** The galleries the worker uses when a request names none (its own LOCALAI_BACKEND_GALLERIES). */
  galleries?: { url: string; name: string }[];
  capability?: string;
  gpuVendor?: string;
  totalVram?: number;
  /** The first port its backends' gRPC servers take, upward (LocalAI: its address's port, 50051 by default). */
  basePort: number;
  /** Registered address; LocalAI's default is `HOSTNAME:<base port>`. */
  address?: string;
  heartbeatMs?: number;
  /** false: a worker older than backend.upgrade, which only answers backend.install (with force). */
  upgradeHandler?: boolean;
  /** false: a worker older than model.stop, which stops processes only by backend.stop. */
  modelStopHandler?: boolean;
  /** How long a gallery index is kept (LocalAI: one hour). */
  indexCacheMs?: number;
  /** How long a stopped process takes to go (LocalAI: a bounded Free, then the kill). */
  stopDelayMs?: number;
}

interface Proc {
  backend: string;
  address: string;
  child: ChildProcess;
  stopping: boolean;
}

/** How long LocalAI's supervisor waits for a started backend's Health before it fails the install. */
const READINESS_MS = 30_000;
/** LocalAI's bound on the Free a model.unload makes. */
const FREE_MS = 5_000;

export class StandInWorker {
  id = '';
  private nc: NatsConnection | null = null;
  private heartbeat: NodeJS.Timeout | undefined;
  private readonly processes = new Map<string, Proc>();
  private readonly locks = new Map<string, Promise<void>>();
  /** Its gallery installs: `gallery.failDownloads(reason)` makes them fail as LocalAI's do. */
  readonly gallery: WorkerGallery;
  private frozen = false;
  /** LocalAI hands backend processes ports upward from its base port. */
  private nextPort: number;
  /** Every request body received, by subject suffix, for tests to inspect. */
  readonly received: { subject: string; body: unknown }[] = [];

  constructor(readonly options: StandInWorkerOptions) {
    this.nextPort = options.basePort;
    this.gallery = new WorkerGallery(options);
  }

  async start(): Promise<void> {
    await mkdir(this.options.backendsDir, { recursive: true });
    const registered = await this.post('/api/node/register', {
      name: this.options.name,
      address: this.options.address ?? `127.0.0.1:${this.options.basePort}`,
      http_address: '127.0.0.1:50050',
      token: this.options.registrationToken,
      total_vram: this.options.totalVram ?? 0,
      available_vram: this.options.totalVram ?? 0,
      gpu_vendor: this.options.gpuVendor ?? '',
      capability: this.options.capability ?? 'default',
      labels: { 'node.replica-slots': '1' },
    });
    this.id = (registered as { id: string }).id;
    await this.connect();
    this.heartbeat = setInterval(() => void this.post(`/api/node/${this.id}/heartbeat`, {}).catch(() => undefined), this.options.heartbeatMs ?? 10_000);
  }

  /** Leaves NATS and stops heartbeats, as a worker whose machine went away; its processes are stopped. */
  async stop(): Promise<void> {
    clearInterval(this.heartbeat);
    await this.nc?.close();
    this.nc = null;
    for (const key of [...this.processes.keys()]) await this.stopProcess(key);
  }

  /** A worker whose NATS connection is gone while its heartbeats still reach the frontend: LocalAI calls it healthy. */
  async leaveNats(): Promise<void> {
    await this.nc?.close();
    this.nc = null;
  }

  /** A worker whose machine hangs: no more heartbeats, and requests are taken but never answered. */
  freeze(): void {
    clearInterval(this.heartbeat);
    this.frozen = true;
  }

  /** The process keys of its running models (`model#replica`). */
  running(): string[] {
    return [...this.processes.entries()].filter(([, p]) => !p.stopping).map(([key]) => key);
  }

  private async connect(): Promise<void> {
    const nc = (this.nc = await connect({ servers: this.options.nats.replace(/^nats:\/\//, '') }));
    const node = `nodes.${sanitizeSubjectToken(this.id)}`;
    const reply = (subject: string, handler: (body: unknown) => Promise<object> | object) =>
      nc.subscribe(`${node}.${subject}`, {
        callback: (_error, msg) => {
          if (this.frozen) return;
          let body: unknown;
          try {
            body = msg.data.length === 0 ? null : JSON.parse(msg.string());
          } catch (error) {
            return respond(msg, { success: false, error: `invalid request: ${(error as Error).message}` });
          }
          this.received.push({ subject, body });
          void Promise.resolve(handler(body)).then((value) => respond(msg, value));
        },
      });
    reply('backend.install', (body) => this.install(body as InstallRequest));
    if (this.options.upgradeHandler !== false) reply('backend.upgrade', (body) => this.upgrade(body as InstallRequest));
    reply('backend.list', () => this.list());
    reply('backend.delete', (body) => this.delete((body as { backend: string }).backend));
    reply('models.running', () => ({ models: this.running().map((key) => ({ model_id: key.slice(0, key.lastIndexOf('#')), replica_index: Number(key.slice(key.lastIndexOf('#') + 1)), address: this.processes.get(key)!.address })) }));
    reply('model.unload', (body) => this.unload((body as { address?: string } | null)?.address ?? ''));
    if (this.options.modelStopHandler !== false) reply('model.stop', (body) => this.stopModel(body as ModelStopRequest));
    nc.subscribe(`${node}.backend.stop`, {
      callback: (_error, msg) => {
        const body = msg.data.length === 0 ? null : (JSON.parse(msg.string()) as { backend?: string } | null);
        this.received.push({ subject: 'backend.stop', body });
        const target = body?.backend ?? '';
        void Promise.all(this.stopTargets(target).map((key) => this.stopProcess(key)));
      },
    });
    await nc.flush();
  }

  private async list(): Promise<object> {
    const backends: object[] = [];
    for (const entry of await readdir(this.options.backendsDir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const md = await readFile(join(this.options.backendsDir, entry.name, 'metadata.json'), 'utf8').then((t) => JSON.parse(t) as Record<string, string>, () => null);
      const name = md?.name || entry.name;
      // LocalAI drops the rows an alias adds; a directory lists under its own name, a meta with its flag.
      backends.push({
        name,
        is_system: false,
        is_meta: Boolean(md?.meta_backend_for),
        ...(md?.installed_at && { installed_at: md.installed_at }),
        ...(md?.gallery_url && { gallery_url: md.gallery_url }),
        ...(md?.version && { version: md.version }),
        ...(md?.uri && { uri: md.uri }),
        ...(md?.digest && { digest: md.digest }),
      });
    }
    // A nil Go slice: an empty list is null on the wire.
    return { backends: backends.length === 0 ? null : backends };
  }

  private install(body: InstallRequest): Promise<object> {
    return this.locked(body.backend, async () => {
      const key = `${body.model_id || body.backend}#${body.replica_index ?? 0}`;
      const force = body.force === true;
      if (!force) {
        const live = this.processes.get(key);
        if (live && !live.stopping) return { success: true, address: live.address };
      } else {
        for (const stop of [...this.processKeysOf(body.backend), key]) await this.stopProcess(stop);
      }
      try {
        if (force || !(await this.installed(body.backend))) await this.fromGallery(body, 'installing');
        return { success: true, address: await this.startProcess(key, body.backend) };
      } catch (error) {
        return { success: false, error: (error as Error).message };
      }
    });
  }

  private upgrade(body: InstallRequest): Promise<object> {
    return this.locked(body.backend, async () => {
      const stopped: string[] = [];
      for (const key of this.processKeysOf(body.backend)) {
        await this.stopProcess(key);
        stopped.push(key);
      }
      try {
        await this.fromGallery(body, 'upgrading');
      } catch (error) {
        return { success: false, error: (error as Error).message, stopped_process_keys: stopped, reports_stopped_processes: true };
      }
      return { success: true, stopped_process_keys: stopped, reports_stopped_processes: true };
    });
  }

  /** handleModelUnload: a bounded, best-effort gRPC Free on the model's process (else any), which keeps running. */
  private async unload(address: string): Promise<object> {
    const target = address || [...this.processes.values()][0]?.address;
    if (target) {
      const client = new BackendClient(target);
      await client.free(FREE_MS).catch(() => undefined);
      client.close();
    }
    return { success: true };
  }

  /**
   * stopModelExact: only the process under exactly this key, and only while it still has the address the frontend
   * knows; Free (bounded) first, then the stop, and the reply once it has exited. A key it does not run is stopped.
   */
  private async stopModel(request: ModelStopRequest): Promise<object> {
    const key = request.process_key;
    const reply = { matched: false, freed: false, terminated: false, process_key: key };
    const proc = this.processes.get(key);
    if (!proc) return { ...reply, terminated: true };
    const matched = { ...reply, matched: true, address: proc.address };
    if (proc.address !== request.expected_address) {
      return { ...matched, error: `address mismatch for process ${key}: recorded ${JSON.stringify(proc.address)}, expected ${JSON.stringify(request.expected_address)}` };
    }
    if (proc.stopping) return { ...matched, error: `process ${key} is already stopping` };
    proc.stopping = true;
    const client = new BackendClient(proc.address);
    const failed = await client.free(FREE_MS).then(() => null, (error: Error) => error);
    client.close();
    await this.stopProcess(key);
    return { ...matched, terminated: true, ...(failed ? { error: `freeing process ${key}: ${failed.message}` } : { freed: true }) };
  }

  private async delete(backend: string): Promise<object> {
    const stopped: string[] = [];
    for (const key of this.processKeysOf(backend)) {
      await this.stopProcess(key);
      stopped.push(key);
    }
    const dir = join(this.options.backendsDir, backend);
    if (!(await this.installed(backend))) return { success: false, error: `backend "${backend}" not found`, stopped_process_keys: stopped, reports_stopped_processes: true };
    const md = await readFile(join(dir, 'metadata.json'), 'utf8').then((t) => JSON.parse(t) as Record<string, string>, () => null);
    await rm(dir, { recursive: true, force: true });
    if (md?.meta_backend_for) await rm(join(this.options.backendsDir, md.meta_backend_for), { recursive: true, force: true });
    return { success: true, stopped_process_keys: stopped, reports_stopped_processes: true };
  }

  /** The gallery install, its errors wrapped as installBackend and upgradeBackend wrap them. */
  private async fromGallery(body: InstallRequest, doing: 'installing' | 'upgrading'): Promise<void> {
    const publisher = body.op_id && this.nc ? new ProgressPublisher(this.nc, this.id, body.op_id, body.backend) : null;
    await this.gallery.install(body, publisher).catch((error: Error) => {
      throw new Error(`${doing} backend from gallery: ${error.message}`);
    });
  }

  private async installed(backend: string): Promise<boolean> {
    return readdir(join(this.options.backendsDir, backend)).then(() => true, () => false);
  }

  /** LocalAI's startBackend: the next port, `run.sh --addr`, and the address only once Health answers OK. */
  private async startProcess(key: string, backend: string): Promise<string> {
    const dir = join(this.options.backendsDir, backend);
    const port = this.nextPort++;
    const address = `127.0.0.1:${port}`;
    const child = spawn(join(dir, 'run.sh'), ['--addr', address], { cwd: dir, stdio: 'ignore', env: { ...process.env, HANGAR_NODE: process.execPath } });
    child.on('error', () => undefined);
    this.processes.set(key, { backend, address, child, stopping: false });
    const client = new BackendClient(address);
    const died = new AbortController();
    child.once('exit', () => died.abort(new Error(`backend process ${backend} died during startup`)));
    try {
      await waitReady(port, client, Date.now() + READINESS_MS, died.signal);
    } catch (error) {
      await this.stopProcess(key);
      throw new Error(`backend ${backend} did not become ready: ${(error as Error).message}`);
    } finally {
      client.close();
    }
    return address;
  }

  private processKeysOf(backend: string): string[] {
    return [...this.processes.entries()].filter(([, p]) => p.backend === backend && !p.stopping).map(([key]) => key);
  }

  /** backend.stop's targets: every process when empty, else a backend's, a model's, or one exact key. */
  private stopTargets(target: string): string[] {
    const keys = [...this.processes.keys()];
    if (!target) return keys;
    return keys.filter((key) => key === target || key.slice(0, key.lastIndexOf('#')) === target || this.processes.get(key)!.backend === target);
  }

  private async stopProcess(key: string): Promise<void> {
    const proc = this.processes.get(key);
    if (!proc) return;
    proc.stopping = true;
    if (this.options.stopDelayMs) await sleep(this.options.stopDelayMs);
    if (proc.child.exitCode === null && proc.child.signalCode === null) {
      proc.child.kill('SIGKILL');
      await once(proc.child, 'exit');
    }
    this.processes.delete(key);
  }

  /** One operation per backend at a time, as lockBackend serialises them. */
  private async locked<T>(backend: string, work: () => Promise<T>): Promise<T> {
    const before = this.locks.get(backend) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    this.locks.set(backend, before.then(() => mine));
    await before;
    try {
      return await work();
    } finally {
      release();
    }
  }

  private async post(path: string, body: object): Promise<unknown> {
    const response = await fetch(`${this.options.frontend}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.options.registrationToken}` },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return response.json();
  }
}

function respond(msg: Msg, value: object): void {
  if (msg.reply) msg.respond(JSON.stringify(value));
}
