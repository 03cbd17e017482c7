// A stand-in for `local-ai worker`, written from LocalAI's code (core/services/worker/: lifecycle.go, install.go,
// models_running.go, registration.go; core/services/messaging/; core/services/nodes/install_progress_publisher.go;
// core/gallery/gallery.go's index cache). It registers with the frontend and sends heartbeats, answers its NATS
// subjects with LocalAI's JSON shapes, downloads an artifact from the gallery with debounced progress events (the last
// one flushed right before the reply), and installs `<backends>/<name>/` with metadata.json. What it installs is a real
// gRPC backend (the echo backend the build writes to dist/backends/echo; the downloaded bytes stand for its image),
// started per model as LocalAI's supervisor starts one (`run.sh --addr HOST:PORT`, ports upward from its base port) and
// reported only once its gRPC Health answers OK (LocalAI waits up to 30 s, then fails the install). It keeps each gallery index for an hour, as LocalAI does, so an upgrade right after a gallery change
// reinstalls the old version. `upgradeHandler: false` is a worker from before backend.upgrade existed.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { cp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { parse } from 'yaml';
import { localaiTimestamp } from '../../core/install/metadata.ts';
import { BackendClient } from '../../core/supervisor/grpc-client.ts';
import { waitReady } from '../../core/supervisor/readiness.ts';
import { formatLocalAiSize, sanitizeSubjectToken, type InstallRequest } from '../protocol.ts';

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
  /** How long a gallery index is kept (LocalAI: one hour). */
  indexCacheMs?: number;
  /** Every install and upgrade fails with this error, as a worker whose gallery cannot be read. */
  failInstalls?: string;
  /** How long a stopped process takes to go (LocalAI: a bounded Free, then the kill). */
  stopDelayMs?: number;
}

interface Proc {
  backend: string;
  address: string;
  child: ChildProcess;
  stopping: boolean;
}

/** LocalAI's leading-edge debounce for progress events. */
const PROGRESS_DEBOUNCE_MS = 250;
const INDEX_CACHE_MS = 60 * 60_000;
/** How long LocalAI's supervisor waits for a started backend's Health before it fails the install. */
const READINESS_MS = 30_000;
/** LocalAI's bound on the Free a model.unload makes. */
const FREE_MS = 5_000;
/** The real gRPC backend every install puts in place (built by `npm run build`). */
const BACKEND_SOURCE = resolve('dist/backends/echo');

export class StandInWorker {
  id = '';
  private nc: NatsConnection | null = null;
  private heartbeat: NodeJS.Timeout | undefined;
  private readonly processes = new Map<string, Proc>();
  private readonly locks = new Map<string, Promise<void>>();
  private readonly indexCache = new Map<string, { text: string; at: number }>();
  private frozen = false;
  /** LocalAI hands backend processes ports upward from its base port. */
  private nextPort: number;
  /** Every request body received, by subject suffix, for tests to inspect. */
  readonly received: { subject: string; body: unknown }[] = [];

  constructor(readonly options: StandInWorkerOptions) {
    this.nextPort = options.basePort;
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
        if (force || !(await this.installed(body.backend))) await this.fromGallery(body);
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
        await this.fromGallery(body);
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

  /** The gallery install: the index (cached an hour), the entry (a meta resolved by this worker's capability), the download. */
  private async fromGallery(body: InstallRequest): Promise<void> {
    if (this.options.failInstalls) throw new Error(this.options.failInstalls);
    const galleries = body.backend_galleries ? (JSON.parse(body.backend_galleries) as { url: string; name: string }[]) : (this.options.galleries ?? []);
    const found = await this.findEntry(galleries, body.backend);
    if (!found) throw new Error(`installing backend from gallery: no backend found with name "${body.backend}"`);
    const { entry } = found;
    if (entry.capabilities) {
      const capability = this.options.capability ?? 'default';
      const build = entry.capabilities[capability] ?? entry.capabilities.default ?? entry.capabilities.cpu;
      const concrete = build ? await this.findEntry(galleries, build) : null;
      if (!concrete) throw new Error(`installing backend from gallery: no build of "${body.backend}" for ${capability}`);
      await this.download(body, concrete.entry, concrete.gallery);
      await this.writeBackend(entry.name, { name: entry.name, meta_backend_for: concrete.entry.name, gallery_url: found.gallery.url, installed_at: localaiTimestamp(), version: concrete.entry.version }, false);
      return;
    }
    await this.download(body, entry, found.gallery);
  }

  private async findEntry(galleries: { url: string; name: string }[], name: string): Promise<{ entry: IndexEntry; gallery: { url: string; name: string } } | null> {
    for (const gallery of galleries) {
      const cacheKey = `${gallery.name}-${gallery.url}`;
      let cached = this.indexCache.get(cacheKey);
      if (!cached || Date.now() - cached.at > (this.options.indexCacheMs ?? INDEX_CACHE_MS)) {
        const response = await fetch(gallery.url);
        if (!response.ok) throw new Error(`installing backend from gallery: failed to read gallery elements: HTTP ${response.status}`);
        cached = { text: await response.text(), at: Date.now() };
        this.indexCache.set(cacheKey, cached);
      }
      const entry = ((parse(cached.text) as IndexEntry[] | null) ?? []).find((e) => e.name.toLowerCase() === name.toLowerCase());
      if (entry) return { entry, gallery };
    }
    return null;
  }

  /** Streams the artifact, publishing LocalAI's progress events (leading-edge debounce, the last one flushed). */
  private async download(body: InstallRequest, entry: IndexEntry, gallery: { url: string; name: string }): Promise<void> {
    const response = await fetch(entry.uri!);
    if (!response.ok || !response.body) throw new Error(`installing backend from gallery: HTTP ${response.status} for ${entry.uri}`);
    const total = Number(response.headers.get('content-length')) || 0;
    const publisher = body.op_id && this.nc ? new ProgressPublisher(this.nc, this.id, body.op_id, body.backend) : null;
    let written = 0;
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        written += chunk.byteLength;
        if (total > 0) publisher?.tick(entry.uri!, formatLocalAiSize(written), formatLocalAiSize(total), (written / total) * 100);
      }
    } finally {
      publisher?.flush();
    }
    await this.writeBackend(entry.name, { name: entry.name, gallery_url: gallery.url, installed_at: localaiTimestamp(), version: entry.version, uri: entry.uri }, true);
  }

  private async writeBackend(name: string, md: Record<string, string | undefined>, runnable: boolean): Promise<void> {
    const dir = join(this.options.backendsDir, name);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true, mode: 0o750 });
    if (runnable) {
      for (const file of ['run.sh', 'server.cjs']) await cp(join(BACKEND_SOURCE, file), join(dir, file));
      // The echo backend names this in its LoadModel reply: the version the worker installed.
      await writeFile(join(dir, 'VERSION'), `${md.version ?? 'none'}\n`);
    }
    const keys = ['alias', 'meta_backend_for', 'name', 'gallery_url', 'installed_at', 'version', 'uri', 'digest'];
    const ordered = Object.fromEntries(keys.filter((k) => md[k]).map((k) => [k, md[k]]));
    await writeFile(join(dir, 'metadata.json'), JSON.stringify(ordered, null, 2));
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

interface IndexEntry {
  name: string;
  uri?: string;
  version?: string;
  capabilities?: Record<string, string>;
}

function respond(msg: Msg, value: object): void {
  if (msg.reply) msg.respond(JSON.stringify(value));
}

/** LocalAI's DebouncedInstallProgressPublisher: the first tick at once, then at most one per window, the last on flush. */
class ProgressPublisher {
  private last = 0;
  private pending: object | null = null;
  private timer: NodeJS.Timeout | undefined;
  private readonly subject: string;

  constructor(
    private readonly nc: NatsConnection,
    private readonly nodeId: string,
    private readonly opId: string,
    private readonly backend: string,
  ) {
    this.subject = `nodes.${sanitizeSubjectToken(nodeId)}.backend.install.${sanitizeSubjectToken(opId)}.progress`;
  }

  tick(file: string, current: string, total: string, percentage: number): void {
    const event = { op_id: this.opId, node_id: this.nodeId, backend: this.backend, file_name: file, current, total, percentage, phase: 'downloading' };
    const now = Date.now();
    if (now - this.last >= PROGRESS_DEBOUNCE_MS) {
      this.last = now;
      this.pending = null;
      return this.publish(event);
    }
    this.pending = event;
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      const pending = this.pending;
      this.pending = null;
      if (pending) {
        this.last = Date.now();
        this.publish(pending);
      }
    }, PROGRESS_DEBOUNCE_MS - (now - this.last));
  }

  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending) this.publish(this.pending);
    this.pending = null;
  }

  private publish(event: object): void {
    this.nc.publish(this.subject, JSON.stringify(event));
  }
}
