import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { hostname } from 'node:os';
import { LOCAL_NODE, nodeMethods } from '../../shared/api.ts';
import { LOG_TEXT_MAX } from '../../shared/event-schema.ts';
import type { NodeCard, NodeEvent, NodeResources } from '../../shared/types.ts';
import { invokeNode, type Envelope } from '../core/invoke.ts';
import type { LocalNodeApi } from '../core/local-node-api.ts';
import { CallGuard } from './call-guard.ts';
import type { ClusterHealth } from './health.ts';
import { TRUSTS_LISTED, type Heartbeat } from './heartbeat.ts';
import type { ClusterIdentity } from './node-key.ts';
import { NodeSender } from './sender.ts';
import { callSubject, eventsSubject, isInboxSubject, presenceSubject, PRESENCE_QUERY } from './subjects.ts';
import type { TrustList } from './trust.ts';

export interface MemberOptions {
  nc: NatsConnection;
  /** This machine's node, which knows itself as `local`. */
  node: LocalNodeApi;
  identity: ClusterIdentity;
  trust: TrustList;
  /** --insecure-any-caller: act on every call, signed or not. */
  anyCaller: boolean;
  health: ClusterHealth;
  name: string;
  heartbeatMs: number;
  /** Where the nonces of the calls it answered are kept. */
  stateDir: string;
  /** How many backends differ from the cluster's desired versions here. */
  drift(): number;
}

/** Events that change what the card says (counts, labels, cordon). */
const CARD_EVENTS: ReadonlySet<NodeEvent['type']> = new Set(['backend', 'backend-removed', 'process', 'process-removed', 'settings']);
const COUNT_DEBOUNCE_MS = 100;
/** Presence queries are answered with at most one heartbeat per this long, however many arrive: the first at once. */
const QUERY_COALESCE_MS = 50;
/**
 * Between cards a node sends a beat (a signed line saying it is there and which card it stands by): a card goes when
 * what it says changes, when it is asked for, and at least every this many heartbeats, so the resources it shows
 * (CPU load, memory, disk, GPUs) are never older than that (30 s at the default 2 s).
 */
export const CARD_EVERY_HEARTBEATS = 15;
/** Gallery entries go out in events of at most this many. */
const ENTRIES_PER_EVENT = 500;

/** No request comes near this; a bigger one is refused before it is parsed. */
export const MAX_REQUEST_BYTES = 256 * 1024;

/**
 * This machine as a cluster member: acts on calls a trusted viewer signed, through the same validating invoker as
 * every other transport, and publishes its signed card and events.
 */
export class Member {
  private readonly subscriptions: Subscription[] = [];
  private readonly sender: NodeSender;
  private readonly guard: CallGuard;
  private timer: NodeJS.Timeout | undefined;
  private queryTimer: NodeJS.Timeout | undefined;
  private lastAnswerAt = 0;
  private heartbeat: Heartbeat | undefined;
  /** The stamp of the last card sent, what it said (its resources aside) and the beats since. */
  private cardAt: string | null = null;
  private sentCard = '';
  private sentTrusts = '';
  private beatsSinceCard = 0;
  private refreshing = false;
  /** A change came while a refresh was reading: it may have read too early, so one more follows it. */
  private refreshAgain = false;
  private refreshTimer: NodeJS.Timeout | undefined;
  private readonly onTrust = () => {
    if (this.heartbeat) this.heartbeat = { ...this.heartbeat, trusts: this.trusts() };
  };
  private readonly onEvent = (event: NodeEvent) => {
    for (const part of fitForCluster(this.relabel(event))) void this.sender.announce(eventsSubject(this.id), 'event', JSON.stringify(part));
    if (CARD_EVENTS.has(event.type)) this.refreshSoon();
  };

  constructor(private readonly options: MemberOptions) {
    this.sender = new NodeSender(options.nc, options.identity, options.health);
    this.guard = new CallGuard({ id: options.identity.id, name: options.name, trust: options.trust, anyCaller: options.anyCaller, stateDir: options.stateDir, cluster: options.identity.cluster ?? '' });
  }

  get id(): string {
    return this.options.identity.id;
  }

  async start(): Promise<void> {
    const { nc, node, name, heartbeatMs, health } = this.options;
    await this.options.trust.refresh();
    await this.guard.open();
    this.options.trust.on('change', this.onTrust);
    const info = await node.info({ node: LOCAL_NODE });
    this.heartbeat = {
      id: this.id, name, host: hostname(), platform: info.platform, arch: info.arch, capability: info.capability, version: info.version,
      counts: { backends: 0, processes: 0, stale: 0, upgradable: 0, drift: 0 }, labels: {}, cordoned: false, resources: null, heartbeatMs, trusts: this.trusts(), open: this.options.anyCaller,
    };
    await this.refresh();
    this.subscriptions.push(
      nc.subscribe(callSubject(this.id), { callback: health.guard('calls', (msg) => this.answer(msg)) }),
      nc.subscribe(PRESENCE_QUERY, { callback: health.guard('cards', () => this.answerQuery()) }),
    );
    node.on('event', this.onEvent);
    this.timer = setInterval(() => void this.beat(), heartbeatMs);
    await this.beat();
  }

  /** What this node's heartbeats say now. */
  current(): Heartbeat | null {
    return this.heartbeat ?? null;
  }

  /** This node's card as its own host shows it when it watches no cluster. */
  card(): NodeCard | null {
    if (!this.heartbeat) return null;
    const { leaving: _leaving, trusts: _trusts, open: _open, ...card } = this.heartbeat;
    return { ...card, self: true, status: 'online', reason: null, lastSeen: new Date().toISOString(), access: 'self' };
  }

  /** Answers one call meant for this node; the host uses it too when a viewer names this node by its id. */
  async serve(method: unknown, params: unknown): Promise<Envelope> {
    const named = typeof params === 'object' && params !== null ? (params as { node?: unknown }).node : undefined;
    if (named !== this.id) {
      return { ok: false, error: { code: 'forbidden', message: `this is node ${this.id}; the call names ${describe(named)}` } };
    }
    const envelope = await invokeNode(this.options.node, method, { ...(params as object), node: LOCAL_NODE }, nodeMethods);
    if (!envelope.ok) return envelope;
    const value = this.relabel(envelope.value);
    if (method === 'info') Object.assign(value as object, { id: this.id });
    return { ok: true, value };
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    clearTimeout(this.refreshTimer);
    clearTimeout(this.queryTimer);
    this.options.node.off('event', this.onEvent);
    this.options.trust.off('change', this.onTrust);
    for (const subscription of this.subscriptions) subscription.unsubscribe();
    if (this.heartbeat) {
      // The last card says what the settings say now: a change made just before (an uncordon) is not left to a
      // refresh still waiting, or viewers would keep the old word for as long as the node is away.
      const { labels, cordoned } = (await this.options.node.settings({ node: LOCAL_NODE }).catch(() => null))?.settings ?? this.heartbeat;
      await this.sender.announce(presenceSubject(this.id), 'card', JSON.stringify({ ...this.heartbeat, labels, cordoned, leaving: true }));
    }
    await this.options.nc.flush().catch(() => undefined);
    await this.guard.close();
  }

  private async answer(msg: Msg): Promise<void> {
    // A reply goes only into an inbox: a reply subject naming anything else (a JetStream API, a bucket, another node)
    // would make this node publish there for whoever sent the call.
    if (!msg.reply || !isInboxSubject(msg.reply)) return this.options.health.refuse(msg.reply ? 'reply subject not an inbox' : 'no reply subject');
    if (msg.data.length > MAX_REQUEST_BYTES) {
      this.options.health.refuse('too large');
      return this.sender.reply(msg.reply, { ok: false, error: { code: 'invalid-request', message: 'the request is too large' } });
    }
    const admitted = await this.guard.admit(msg);
    if (!admitted.ok) {
      this.options.health.refuse(admitted.reason);
      if (admitted.unanswered) return;
      return this.sender.reply(msg.reply, { ok: false, error: { code: admitted.failed ? 'failed' : 'forbidden', message: admitted.message } });
    }
    let request: unknown;
    try {
      request = JSON.parse(msg.string());
    } catch {
      request = undefined;
    }
    const envelope: Envelope = typeof request === 'object' && request !== null && !Array.isArray(request)
      ? await this.serve((request as { method?: unknown }).method, (request as { params?: unknown }).params)
      : { ok: false, error: { code: 'invalid-request', message: 'the request is not a JSON object' } };
    await this.sender.reply(msg.reply, envelope);
  }

  private answerQuery(): void {
    if (this.queryTimer) return;
    const wait = this.lastAnswerAt + QUERY_COALESCE_MS - Date.now();
    this.queryTimer = setTimeout(() => {
      this.queryTimer = undefined;
      this.lastAnswerAt = Date.now();
      void this.sendCard(true);
    }, Math.max(0, wait));
  }

  /** Sends the card when it is due, else a beat; then refreshes the card and the trust list for the next one. */
  private async beat(): Promise<void> {
    if (!this.heartbeat) return;
    const due = this.cardAt === null || this.beatsSinceCard + 1 >= CARD_EVERY_HEARTBEATS || this.cardUnsent();
    if (due) await this.sendCard();
    else if ((await this.sender.beat(presenceSubject(this.id), this.cardAt!)) !== null) this.beatsSinceCard++;
    await this.options.trust.refresh().catch(() => false);
    await this.refresh();
  }

  /** The card, with its trust list when it changed or `asked` (a viewer's question, which any viewer may have sent). */
  private async sendCard(asked = false): Promise<void> {
    const card = this.heartbeat;
    if (!card) return;
    const trusts = JSON.stringify(card.trusts);
    const { trusts: _trusts, ...rest } = card;
    const withTrusts = asked || trusts !== this.sentTrusts;
    const at = await this.sender.announce(presenceSubject(this.id), 'card', JSON.stringify(withTrusts ? card : rest));
    if (at === null) return;
    this.cardAt = at;
    this.sentCard = saidBy(card);
    if (withTrusts) this.sentTrusts = trusts;
    this.beatsSinceCard = 0;
  }

  /** The card says something the last one sent did not. */
  private cardUnsent(): boolean {
    return this.heartbeat !== undefined && saidBy(this.heartbeat) !== this.sentCard;
  }

  private trusts(): string[] {
    return this.options.trust.ids().slice(0, TRUSTS_LISTED);
  }

  /**
   * A backend, process or setting changed (or the drift did): the card's counts (stale above all), labels and
   * cordon reach viewers now, not a heartbeat later.
   */
  refreshSoon(): void {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = setTimeout(() => {
      // Against what was last sent, not the card before this read: a heartbeat's own refresh may have read the change
      // first, and it sends nothing until the next beat.
      void this.refresh().then(() => (this.cardUnsent() ? this.sendCard() : undefined));
    }, COUNT_DEBOUNCE_MS);
  }

  /** Reads again what the card says of the node. */
  private async refresh(): Promise<void> {
    if (!this.heartbeat) return;
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    this.refreshing = true;
    try {
      const { node } = this.options;
      // Counts from the node's index of its backends: a heartbeat never lists them.
      const [backendCounts, settings, machine] = await Promise.all([
        node.counts(),
        node.settings({ node: LOCAL_NODE }),
        node.resources({ node: LOCAL_NODE }).catch(() => null),
      ]);
      // The card stays small: per-process figures are asked for, never sent every heartbeat.
      const { processes: _processes, ...resources } = machine ?? { processes: null };
      const { labels, cordoned } = settings.settings;
      const counts = { ...backendCounts, drift: this.options.drift() };
      if (this.heartbeat) this.heartbeat = { ...this.heartbeat, counts, labels, cordoned, resources: machine ? (resources as NodeResources) : null };
    } catch {
      // the next refresh reads it again
    } finally {
      this.refreshing = false;
      if (this.refreshAgain) {
        this.refreshAgain = false;
        this.refreshSoon();
      }
    }
  }

  /** The node calls itself `local`; the cluster knows it by its id. */
  private relabel<T>(value: T): T {
    return relabelNode(value, this.id);
  }
}

/** What a card says that makes it worth sending again: all of it but its resources, which change at every read. */
function saidBy(card: Heartbeat): string {
  const { resources: _resources, ...said } = card;
  return JSON.stringify(said);
}

/** An event as the cluster takes it: a log line cut to a size every viewer accepts, gallery entries in batches. */
function fitForCluster(event: NodeEvent): NodeEvent[] {
  if (event.type === 'log' && event.line.text.length > LOG_TEXT_MAX) {
    return [{ ...event, line: { ...event.line, text: `${event.line.text.slice(0, LOG_TEXT_MAX)}…` } }];
  }
  if (event.type === 'gallery-entries' && event.entries.length > ENTRIES_PER_EVENT) {
    const batches: NodeEvent[] = [];
    for (let i = 0; i < event.entries.length; i += ENTRIES_PER_EVENT) batches.push({ ...event, entries: event.entries.slice(i, i + ENTRIES_PER_EVENT) });
    return batches;
  }
  return [event];
}

export function relabelNode<T>(value: T, id: string): T {
  if (Array.isArray(value)) return value.map((v: unknown) => relabelNode(v, id)) as T;
  if (typeof value !== 'object' || value === null) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) copy[key] = key === 'node' && v === LOCAL_NODE ? id : relabelNode(v, id);
  return copy as T;
}

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value.slice(0, 64)) : 'no node';
}
