// A host's link to a LocalAI distributed cluster: the frontend's node registry read over HTTP, the workers called over
// LocalAI's NATS. Each backend worker is a node of its own kind (`localai-worker`) with a card like a Hangar member's;
// its backends and models are read again on every poll, and what changed goes out as the usual node events.
import { EventEmitter } from 'node:events';
import type { NatsConnection } from '@nats-io/transport-node';
import type { NodeMethod } from '../../shared/api.ts';
import { HangarError } from '../../shared/errors.ts';
import { workerStatusReason } from '../../shared/localai-worker.ts';
import type { BackendView, LocalAiStatusView, NodeCard, NodeEvent, NodeInfo } from '../../shared/types.ts';
import { countsOf } from '../core/node/index.ts';
import { ClusterGalleries } from './cluster-galleries.ts';
import { FrontendClient, type FrontendNode } from './frontend-client.ts';
import { addressHost, sameDirectory, sameMachine } from './pairing.ts';
import { WORKER_TIMEOUTS_MS } from './protocol.ts';
import { WorkerCallError, WorkerClient } from './worker-client.ts';
import { WorkerNode, type WorkerRequest } from './worker-node.ts';
import { oneLine } from '../../shared/error-text.ts';

/** Hangar's node id for LocalAI worker `id`: never one of Hangar's own (16 hex digits, or `local`). */
export const workerNodeId = (id: string) => `localai-${id}`;
const USABLE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,55}$/;

export interface LocalAiLinkOptions {
  frontend: FrontendClient;
  nc: NatsConnection;
  /** How often the node registry and each worker's lists are read again (LocalAI's workers beat every 10 s). */
  pollMs: number;
  /** How long an upgrade waits for the models it stopped to run again. */
  reloadWaitMs: number;
  timeouts?: typeof WORKER_TIMEOUTS_MS;
  /** The Hangar nodes this host sees, for "same machine, same backends directory". */
  hangar?: HangarNodes;
  /** Told each change in whether the frontend answers, in one line. */
  log?: (line: string) => void;
}

export interface HangarNodes {
  cards(): Promise<NodeCard[]>;
  info(id: string): Promise<Pick<NodeInfo, 'addresses'>>;
  backends(id: string): Promise<BackendView[]>;
}

interface Known {
  node: FrontendNode;
  worker: WorkerNode;
  card: NodeCard;
}

export class LocalAiLink extends EventEmitter<{ event: [NodeEvent] }> {
  private readonly known = new Map<string, Known>();
  private readonly client: WorkerClient;
  readonly galleries: ClusterGalleries;
  private readonly pairs = new Map<string, string>();
  private problem: string | null = null;
  private refreshedAt: string | null = null;
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | null = null;
  private readonly reading = new Map<string, Promise<void>>();
  /** Per worker, the number of its latest read: only that read's card is shown. */
  private readonly lastRead = new Map<string, number>();
  private pairing: Promise<void> | null = null;
  private closed = false;

  constructor(private readonly options: LocalAiLinkOptions) {
    super();
    this.client = new WorkerClient(options.nc, options.timeouts);
    this.galleries = new ClusterGalleries(options.frontend);
  }

  /** Reads the registry and every worker once (so the first answer already lists them), then on every poll. */
  async start(): Promise<void> {
    await this.refresh(true);
    this.timer = setInterval(() => void this.refresh(false), this.options.pollMs);
  }

  cards(): NodeCard[] {
    return [...this.known.values()].map((k) => k.card).sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  }

  has(node: string): boolean {
    return this.known.has(node);
  }

  /** The Hangar node paired with worker `node`, and the worker paired with Hangar node `node`. */
  pairOf(node: string): string | null {
    for (const [worker, hangar] of this.pairs) {
      if (worker === node) return hangar;
      if (hangar === node) return worker;
    }
    return null;
  }

  async call(method: NodeMethod, req: WorkerRequest): Promise<unknown> {
    const known = this.known.get(req.node);
    if (!known) throw new HangarError('not-found', `no LocalAI worker ${req.node}`);
    const offline = known.card.status !== 'online' && !READS.has(method);
    if (offline) throw new HangarError('conflict', `LocalAI worker ${known.card.name} is ${known.card.reason ?? 'offline'}`);
    return known.worker.call(method, req);
  }

  /**
   * A Hangar node that shares its backends directory with a worker swapped a backend: the worker's processes of that
   * backend run from the replaced directory, so they are stopped (backend.stop, as LocalAI's frontend sends it), and
   * LocalAI starts them again from the new one on their next request.
   */
  hangarEvent(event: NodeEvent): void {
    if (event.type !== 'job' || event.job.state !== 'done' || event.job.kind === 'delete') return;
    const worker = this.pairOf(event.node);
    const known = worker && this.known.get(worker);
    if (!known || this.pairs.get(worker) !== event.node) return;
    void this.client.stop(known.node.id, event.job.backend).catch(() => undefined);
  }

  status(): LocalAiStatusView {
    return { frontend: this.options.frontend.url, connected: this.problem === null, reason: this.problem, workers: this.known.size, refreshedAt: this.refreshedAt };
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.refreshing;
    await Promise.all([...this.reading.values(), this.pairing]);
    this.galleries.close();
    await this.options.nc.close();
  }

  /**
   * Reads the registry again; each worker is read in its own time, so one slow to answer holds up no other (a poll
   * skips a worker still being read). `wait`: until every worker has answered.
   */
  private refresh(wait: boolean): Promise<void> {
    this.refreshing ??= this.readAll(wait)
      .catch((error: unknown) => this.setProblem(oneLine(error)))
      .finally(() => (this.refreshing = null));
    return this.refreshing;
  }

  private setProblem(problem: string | null): void {
    if (problem !== this.problem) this.options.log?.(`LocalAI cluster ${this.options.frontend.url}: ${problem === null ? 'its frontend answers again' : `${problem}; asked again every ${this.options.pollMs / 1000} s`}`);
    this.problem = problem;
  }

  private async readAll(wait: boolean): Promise<void> {
    const nodes = (await this.options.frontend.nodes()).filter((n) => (n.node_type === '' || n.node_type === 'backend') && USABLE_ID.test(n.id));
    this.setProblem(null);
    this.refreshedAt = new Date().toISOString();
    const listed = new Set<string>();
    const reads = nodes.map((node) => {
      const id = workerNodeId(node.id);
      listed.add(id);
      const identity = { node: id, localaiId: node.id, name: node.name, capability: capabilityOf(node) };
      const worker = this.known.get(id)?.worker ?? new WorkerNode(identity, { client: this.client, galleries: this.galleries, emit: (e) => this.emit('event', e), reloadWaitMs: this.options.reloadWaitMs });
      worker.update(identity);
      return this.readWorker(node, worker);
    });
    for (const [id, known] of this.known) {
      if (!listed.has(id) && known.card.reason !== GONE) this.setCard({ ...known, card: { ...known.card, status: 'offline', reason: GONE } });
    }
    const hangar = this.options.hangar;
    const done = Promise.all(reads).then(() => (hangar && reads.length > 0 ? this.pair(hangar) : undefined));
    if (wait) await done;
  }

  /**
   * A worker LocalAI says takes no calls is shown so at once, even while an earlier read still waits for its reply (a
   * worker that went away mid-request leaves it waiting out the request's time limit); that read's card is dropped.
   */
  private readWorker(node: FrontendNode, worker: WorkerNode): Promise<void> {
    const reading = this.reading.get(worker.id);
    if (reading && workerStatusReason(node.status) === null) return reading;
    const mine = (this.lastRead.get(worker.id) ?? 0) + 1;
    this.lastRead.set(worker.id, mine);
    const read: Promise<void> = this.cardOf(node, worker)
      .then((card) => {
        if (!this.closed && this.lastRead.get(worker.id) === mine) this.setCard({ node, worker, card });
      })
      .catch(() => undefined)
      .finally(() => {
        if (this.reading.get(worker.id) === read) this.reading.delete(worker.id);
      });
    this.reading.set(worker.id, read);
    return read;
  }

  /** Pairs as pairAll does, one pass at a time. */
  private pair(hangar: HangarNodes): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.pairing ??= this.pairAll(hangar)
      .catch(() => undefined)
      .finally(() => (this.pairing = null));
    return this.pairing;
  }

  private async cardOf(node: FrontendNode, worker: WorkerNode): Promise<NodeCard> {
    let reason = workerStatusReason(node.status);
    let counts = { ...countsOf([]), drift: 0 };
    if (reason === null) {
      try {
        const { backends, processes } = await worker.refresh();
        counts = { ...countsOf(backends), drift: 0, processes: processes.length, stale: 0 };
      } catch (error) {
        // Read after "LocalAI worker NAME is", as LocalAI's own reasons are.
        reason = `failing: ${error instanceof WorkerCallError ? error.predicate : oneLine(error)}`;
      }
    }
    return {
      id: worker.id,
      name: node.name,
      self: false,
      status: reason === null ? 'online' : 'offline',
      reason,
      host: addressHost(node.address),
      platform: '',
      arch: '',
      capability: capabilityOf(node),
      version: '',
      counts,
      heartbeatMs: this.options.pollMs,
      lastSeen: node.last_heartbeat || new Date().toISOString(),
      access: 'trusted',
      labels: node.labels,
      // LocalAI's own draining is its cordon: a draining worker is away, with LocalAI's word.
      cordoned: false,
      // LocalAI reports a worker's VRAM, not its CPU or disks: what it reports is on the worker's own view.
      resources: null,
      kind: 'localai-worker',
      can: worker.can,
      localai: {
        id: node.id,
        status: node.status,
        address: node.address,
        gpuVendor: node.gpu_vendor || null,
        totalVramBytes: node.total_vram,
        availableVramBytes: node.available_vram,
        frontend: this.options.frontend.url,
        pairedWith: this.pairs.get(worker.id) ?? null,
      },
    };
  }

  private setCard(next: Known): void {
    const before = this.known.get(next.worker.id);
    this.known.set(next.worker.id, next);
    if (!before || JSON.stringify(before.card) !== JSON.stringify(next.card)) this.emit('event', { type: 'member', node: next.card.id, member: next.card });
  }

  /** Finds, for every online worker, the Hangar node on its machine and backends directory (see pairing.ts). */
  private async pairAll(hangar: HangarNodes): Promise<void> {
    const cards = (await hangar.cards().catch(() => [])).filter((c) => (c.kind ?? 'hangar') === 'hangar' && c.status === 'online');
    const infos = new Map(await Promise.all(cards.map(async (c) => [c.id, await hangar.info(c.id).catch(() => ({ addresses: [] }))] as const)));
    for (const known of this.known.values()) {
      let paired: string | null = null;
      if (known.card.status === 'online') {
        for (const card of cards.filter((c) => sameMachine(known.node.address, { card: c, info: infos.get(c.id)! }))) {
          const [rows, backends] = await Promise.all([known.worker.rows().catch(() => []), hangar.backends(card.id).catch(() => [])]);
          if (sameDirectory(rows, backends)) paired = card.id;
        }
      } else {
        paired = this.pairs.get(known.worker.id) ?? null;
      }
      if (paired) this.pairs.set(known.worker.id, paired);
      else this.pairs.delete(known.worker.id);
      const localai = known.card.localai!;
      if (localai.pairedWith !== paired) this.setCard({ ...known, card: { ...known.card, localai: { ...localai, pairedWith: paired } } });
    }
  }
}

const GONE = 'no longer registered with LocalAI\'s frontend';

/** Calls that read only: answered from a worker that is not healthy too, as far as it answers. */
const READS: ReadonlySet<NodeMethod> = new Set(['info', 'jobs', 'waitJob']);

/** The worker's own capability; for one registered before LocalAI reported it, LocalAI's fallback from its GPU. */
function capabilityOf(node: FrontendNode): string {
  if (node.capability) return node.capability;
  return node.gpu_vendor && node.total_vram > 4 * 1024 ** 3 ? node.gpu_vendor : 'default';
}
