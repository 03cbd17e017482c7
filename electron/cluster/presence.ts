import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { EventEmitter } from 'node:events';
import { nodeId } from '../../shared/schemas.ts';
import type { NodeAccess, NodeCard } from '../../shared/types.ts';
import type { ClusterHealth } from './health.ts';
import { cardSchema, MISSED_HEARTBEATS, type Heartbeat } from './heartbeat.ts';
import type { PublicKey } from './node-key.ts';
import { check, signingKey } from './signed.ts';
import { PRESENCE_ALL, PRESENCE_QUERY, subjectNode } from './subjects.ts';
import { HangarError } from '../../shared/errors.ts';

interface Seen {
  heartbeat: Heartbeat;
  at: number;
  offline: string | null;
  /** Heard since this host last began watching: one not heard yet may have gone while no one watched. */
  heard: boolean;
  /** The sequence of the last card or beat taken: one is taken only above it. */
  sequence: number;
  /** The key the card was signed with, which its beats are checked against, and the card's own sequence. */
  key: PublicKey;
  cardAt: string;
}

/** Far above any card a node sends (its trust list included). */
const CARD_MAX_BYTES = 64 * 1024;
/**
 * Members (nodes this viewer trusts, nodes that trust it, its own) and strangers are kept apart, each within a limit:
 * a flood of cards from made-up keys turns over the strangers, never a member's place, and a stranger is forgotten once
 * it falls silent.
 */
const MEMBERS_KEPT = 1024;
const STRANGERS_KEPT = 64;
/**
 * A host that is also a node watches the cluster only while someone looks through it, and this many heartbeats after
 * the last look (30 s at the default 2 s): cards go to the hosts that show them, so the server's traffic grows with
 * the nodes, not with their square.
 */
export const WATCH_LINGER_HEARTBEATS = 15;
/**
 * The first round of cards once watching begins. Every member answers the query at once (or within its coalescing,
 * 50 ms, when it was just asked): the round ends when the members known before have answered and no card came for ROUND_QUIET_MS, not before
 * ROUND_MIN_MS (a table with no members known yet), and at the latest at ROUND_MAX_MS (a known member gone meanwhile).
 */
const ROUND_QUIET_MS = 25;
const ROUND_MIN_MS = 100;
const ROUND_MAX_MS = 500;
/** A revoked member is listed, as revoked, this long after its revocation: long enough to see it go, not for ever. */
export const REVOKED_LISTED_MS = 3_600_000;

export interface PresenceOptions {
  nc: NatsConnection;
  /** This host's node id, when it is a member. */
  selfId: string | null;
  /** This host's key id: a member's card says whether it trusts it. */
  keyId: string;
  /** Whether this host's trust list holds the key of node `id`. */
  trusted(id: string): boolean;
  checkMs: number;
  heartbeatMs: number;
  health: ClusterHealth;
  /** The cluster cards are signed for. */
  cluster: string;
  /** This host's own card as its member has it now: it is online to its own viewers whatever the link does. */
  selfCard(): Heartbeat | null;
}

/** What a viewer that lost the NATS server says of the other nodes: it cannot tell. */
export const NO_BROKER = 'no broker';
const NOT_HEARD = 'not heard since this host began watching the cluster';

interface Round {
  done: Promise<void>;
  /** A card was heard: the round ends once the members known before are in and the cards stop. */
  heard(id: string): void;
}

/**
 * A viewer's table of the cluster's members, kept from their heartbeats while it watches (see `watch` and `look`). A
 * card is taken only from its own presence subject, signed by the key its id derives from, newer than the last one
 * taken, and valid by the schema; a beat only when signed by the key of the card taken from that node and newer than
 * what was taken; anything else is dropped and counted. A member goes offline when MISSED_HEARTBEATS
 * of its heartbeats in a row are missing. While the link to the server is down the others are `unknown`, not offline,
 * and this host's own node stays online.
 */
export class Presence extends EventEmitter<{ member: [NodeCard]; removed: [string]; watching: [boolean]; heard: [string] }> {
  private readonly seen = new Map<string, Seen>();
  private subscription: Subscription | undefined;
  private timer: NodeJS.Timeout | undefined;
  private linked = true;
  private watchers = 0;
  private lingerTimer: NodeJS.Timeout | undefined;
  private round: Round | null = null;
  /** Since when silence counts: the start of watching, or the link's return. */
  private listeningSince = 0;
  /** When this host last asked for every card because a beat named one it had missed. */
  private askedAt = 0;
  /** The members an admin revoked, by id, with when its grant says so. */
  private revoked = new Map<string, number>();

  constructor(private readonly options: PresenceOptions) {
    super();
  }

  /** Keeps the table live until the returned function is called, and a linger after; `heard` is told of each node heard from. */
  watch(heard?: (id: string) => void): () => void {
    this.watchers++;
    this.begin();
    if (heard) this.on('heard', heard);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (heard) this.off('heard', heard);
      this.watchers--;
      this.linger();
    };
  }

  /** Makes the table live for a linger more; resolves once the first round of cards since it began is in. */
  async look(): Promise<void> {
    this.begin();
    this.linger();
    // Without the server no card can come: the table says so (`unknown`, no broker) at once.
    if (this.linked) await this.round?.done;
  }

  get watching(): boolean {
    return this.subscription !== undefined;
  }

  private begin(): void {
    if (this.subscription) return;
    const { nc, health, checkMs } = this.options;
    this.subscription = nc.subscribe(PRESENCE_ALL, { callback: health.guard('cards', (msg) => this.hear(msg)) });
    this.timer = setInterval(() => this.expire(), checkMs);
    this.listeningSince = Date.now();
    this.forgetRevoked();
    const awaited = new Set<string>();
    for (const seen of this.seen.values()) {
      if (seen.heartbeat.id === this.options.selfId) continue;
      seen.heard = false;
      if (seen.offline !== null || this.revoked.has(seen.heartbeat.id)) continue;
      awaited.add(seen.heartbeat.id);
      this.emit('member', this.card(seen));
    }
    this.round = firstRound(awaited);
    this.emit('watching', true);
    nc.publish(PRESENCE_QUERY);
  }

  private linger(): void {
    clearTimeout(this.lingerTimer);
    this.lingerTimer = setTimeout(() => this.watchers === 0 && this.end(), WATCH_LINGER_HEARTBEATS * this.options.heartbeatMs);
    this.lingerTimer.unref();
  }

  private end(): void {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    clearInterval(this.timer);
    this.round = null;
    this.emit('watching', false);
  }

  cards(): NodeCard[] {
    return [...this.seen.values()].map((s) => this.card(s)).sort(byName);
  }

  card(idOrSeen: string | Seen): NodeCard {
    const seen = typeof idOrSeen === 'string' ? this.seen.get(idOrSeen) : idOrSeen;
    if (!seen) throw new HangarError('not-found', `no member ${String(idOrSeen)}`);
    const self = seen.heartbeat.id === this.options.selfId;
    const { leaving: _leaving, trusts: _trusts, open: _open, ...heartbeat } = (self && this.options.selfCard()) || seen.heartbeat;
    return { ...heartbeat, self, ...this.status(seen, self), lastSeen: new Date(self ? Date.now() : seen.at).toISOString(), access: this.access(seen.heartbeat) };
  }

  private status(seen: Seen, self: boolean): Pick<NodeCard, 'status' | 'reason'> {
    if (self) return { status: 'online', reason: null };
    // The server closed its connection and refuses its credential: it is not coming back, whatever its last card said.
    const revokedAt = this.revoked.get(seen.heartbeat.id);
    if (revokedAt !== undefined) return { status: 'offline', reason: `revoked from the cluster at ${new Date(revokedAt).toISOString()}` };
    if (seen.offline !== null) return { status: 'offline', reason: seen.offline };
    if (!this.linked) return { status: 'unknown', reason: NO_BROKER };
    return seen.heard ? { status: 'online', reason: null } : { status: 'unknown', reason: NOT_HEARD };
  }

  /**
   * The link to the server went down or came back. Down: every other member is unknown until it is back. Back: each
   * gets a fresh MISSED_HEARTBEATS to be heard again, and every member is asked for a heartbeat at once.
   */
  setLinked(linked: boolean): void {
    if (linked === this.linked) return;
    this.linked = linked;
    if (linked && this.watching) {
      this.listeningSince = Date.now();
      this.options.nc.publish(PRESENCE_QUERY);
    }
    for (const seen of this.seen.values()) this.emit('member', this.card(seen));
  }

  /** The members the cluster's admins revoked (their grants in the store say so), each with when. */
  setRevoked(revoked: Map<string, number>): void {
    const before = this.revoked;
    this.revoked = revoked;
    this.forgetRevoked();
    for (const seen of this.seen.values()) {
      const id = seen.heartbeat.id;
      if (before.get(id) !== revoked.get(id)) this.emit('member', this.card(seen));
    }
  }

  /** Whether node `id` was revoked longer ago than a revoked member is listed: it is no longer shown. */
  forgotten(id: string): boolean {
    const revokedAt = this.revoked.get(id);
    return revokedAt !== undefined && Date.now() - revokedAt > REVOKED_LISTED_MS;
  }

  private forgetRevoked(): void {
    for (const id of this.revoked.keys()) if (this.forgotten(id)) this.forget(id);
  }

  has(id: string): boolean {
    return this.seen.has(id);
  }

  /** Whether this host takes events from node `id`: a member it has the card of (a stranger's events are of no use here). */
  listensTo(id: string): boolean {
    const seen = this.seen.get(id);
    return seen !== undefined && this.isMember(seen.heartbeat);
  }

  close(): void {
    clearTimeout(this.lingerTimer);
    if (this.watching) this.end();
  }

  private hear(msg: Msg): void {
    const drop = (reason: string) => this.options.health.drop('cards', reason, msg.subject);
    if (msg.data.length > CARD_MAX_BYTES) return drop('too large');
    const id = subjectNode(msg.subject);
    if (!nodeId.safeParse(id).success) return drop('bad subject');
    if (!signingKey(msg) && msg.headers) return this.hearBeat(msg, id, drop);
    const checked = check(msg, 'card', id, this.options.cluster);
    if (!checked.ok) return drop(checked.reason);
    if (checked.key.id !== id) return drop("signed by another node's key");
    if (checked.stamp.encoding !== undefined) return drop('compressed');
    let parsed;
    try {
      parsed = cardSchema.safeParse(JSON.parse(msg.string()));
    } catch {
      return drop('not JSON');
    }
    if (!parsed.success) return drop('not a card');
    if (parsed.data.id !== id) return drop('names another node');
    if (this.forgotten(id)) return drop('revoked from the cluster');
    const sequence = Number(checked.stamp.at);
    const known = this.seen.get(id);
    if (!Number.isSafeInteger(sequence) || sequence <= (known?.sequence ?? 0)) return drop('replayed');
    // A card without its trust list keeps the one this host was told last.
    const heartbeat = { ...parsed.data, trusts: parsed.data.trusts ?? known?.heartbeat.trusts ?? [] };
    if (!known && !this.makeRoom(this.isMember(heartbeat))) return drop('too many nodes');
    this.record(heartbeat, sequence, checked.key, checked.stamp.at!);
    this.emit('heard', id);
    this.round?.heard(id);
  }

  /**
   * A beat: the node is there and stands by its card stamped as the beat says. Checked against the key of the card
   * taken from it; one that names another card means a card was missed (sent while the link was down), so the cards
   * are asked for again.
   */
  private hearBeat(msg: Msg, id: string, drop: (reason: string) => void): void {
    const known = this.seen.get(id);
    // Beats that come before the cards asked for when this host began listening are the usual start, not a drop.
    if (!known) return Date.now() - this.listeningSince < ROUND_MAX_MS ? undefined : drop('no card yet');
    const checked = check(msg, 'beat', id, this.options.cluster, known.key);
    if (!checked.ok) return drop(checked.reason);
    const [at = '', cardAt] = msg.string().split(' ');
    const sequence = Number(at);
    if (!/^\d{1,16}$/.test(at) || !Number.isSafeInteger(sequence) || sequence <= known.sequence) return drop('replayed');
    const wasOnline = known.heard && known.offline === null;
    known.sequence = sequence;
    known.at = Date.now();
    known.heard = true;
    if (!known.heartbeat.leaving) known.offline = null;
    if (cardAt !== known.cardAt) this.askForCards();
    if (!wasOnline) this.emit('member', this.card(known));
    this.emit('heard', id);
    this.round?.heard(id);
  }

  /** Every member sends its card again: at most once a heartbeat, however many beats name a card this host missed. */
  private askForCards(): void {
    const now = Date.now();
    if (now - this.askedAt < this.options.heartbeatMs) return;
    this.askedAt = now;
    this.options.nc.publish(PRESENCE_QUERY);
  }

  private isMember(heartbeat: Heartbeat): boolean {
    return heartbeat.id === this.options.selfId || heartbeat.open || heartbeat.trusts.includes(this.options.keyId) || this.options.trusted(heartbeat.id);
  }

  /**
   * A place for a new node among its kind: a stranger takes the place of the stranger silent longest; a member that of
   * the member silent longest that this host does not trust itself. False when there is none to give.
   */
  private makeRoom(member: boolean): boolean {
    const kind = [...this.seen.values()].filter((s) => this.isMember(s.heartbeat) === member);
    if (kind.length < (member ? MEMBERS_KEPT : STRANGERS_KEPT)) return true;
    const givers = kind.filter((s) => s.heartbeat.id !== this.options.selfId && !this.options.trusted(s.heartbeat.id));
    const quietest = givers.sort((a, b) => a.at - b.at)[0];
    if (!quietest) return false;
    this.forget(quietest.heartbeat.id);
    return true;
  }

  private forget(id: string): void {
    if (this.seen.delete(id)) this.emit('removed', id);
  }

  private access(heartbeat: Heartbeat): NodeAccess {
    if (heartbeat.id === this.options.selfId) return 'self';
    if (this.revoked.has(heartbeat.id)) return 'revoked';
    if (heartbeat.open) return 'open';
    return heartbeat.trusts.includes(this.options.keyId) ? 'trusted' : 'not-trusted';
  }

  private record(heartbeat: Heartbeat, sequence: number, key: PublicKey, cardAt: string): void {
    const before = this.seen.get(heartbeat.id);
    const seen: Seen = { heartbeat, at: Date.now(), offline: heartbeat.leaving ? 'it shut down' : null, sequence, heard: true, key, cardAt };
    this.seen.set(heartbeat.id, seen);
    const changed = !before?.heard || before.offline !== seen.offline || JSON.stringify(before.heartbeat) !== JSON.stringify(heartbeat);
    if (changed) this.emit('member', this.card(seen));
  }

  private expire(): void {
    // Without the server no heartbeat can arrive: silence then says nothing about a member.
    if (!this.linked) return;
    this.forgetRevoked();
    const now = Date.now();
    for (const seen of [...this.seen.values()]) {
      if (seen.heartbeat.id === this.options.selfId) continue;
      // A member gets its full MISSED_HEARTBEATS from when this host could hear it again, but one asked for its card
      // that did not answer within the round is silent since its last card.
      const asked = !seen.heard && now - this.listeningSince >= ROUND_MAX_MS;
      if (now - (asked ? seen.at : Math.max(seen.at, this.listeningSince)) < MISSED_HEARTBEATS * seen.heartbeat.heartbeatMs) continue;
      if (!this.isMember(seen.heartbeat)) {
        this.forget(seen.heartbeat.id);
        continue;
      }
      if (seen.offline !== null) continue;
      // Read for as long as the member stays away: a time stays true, an age would not.
      seen.offline = `no heartbeat since ${new Date(seen.at).toISOString()}`;
      this.emit('member', this.card(seen));
    }
  }
}

/** The round that begins with a query: it ends as the constants above say. */
function firstRound(awaited: Set<string>): Round {
  const started = Date.now();
  let quiet: NodeJS.Timeout | undefined;
  let over = false;
  let end = () => undefined as void;
  const done = new Promise<void>((resolve) => (end = resolve));
  const finish = () => {
    over = true;
    clearTimeout(quiet);
    clearTimeout(latest);
    end();
  };
  const latest = setTimeout(finish, ROUND_MAX_MS);
  const settle = () => {
    clearTimeout(quiet);
    if (awaited.size === 0) quiet = setTimeout(finish, Math.max(ROUND_QUIET_MS, started + ROUND_MIN_MS - Date.now()));
  };
  settle();
  return {
    done,
    heard: (id) => {
      if (over || (!awaited.delete(id) && awaited.size > 0)) return;
      settle();
    },
  };
}

function byName(a: NodeCard, b: NodeCard): number {
  return a.name.localeCompare(b.name) || a.id.localeCompare(b.id);
}
