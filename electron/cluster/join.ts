// Joins this host to the cluster in the role it was given. Loaded only by a host that joins one: it alone brings in
// the NATS client.
import { EventEmitter } from 'node:events';
import type { NodeEvent, ClusterRole } from '../../shared/types.ts';
import { connectCluster, type ClusterConnectOptions } from './connect.ts';
import { ClusterHealth } from './health.ts';
import type { ClusterLink } from './host.ts';
import { loadIdentity } from './identity.ts';
import { Member, type EventSource } from './member.ts';
import { Presence } from './presence.ts';
import { RemoteEvents } from './remote-events.ts';
import { Caller } from './request.ts';
import { inboxPrefixOf } from './subjects.ts';
import { TrustList } from './trust.ts';

export interface LinkOptions extends ClusterConnectOptions {
  node: EventSource;
  home: string;
  role: ClusterRole;
  /** --insecure-any-caller: act on every call, signed or not. */
  anyCaller: boolean;
  heartbeatMs: number;
  callTimeoutMs: number;
}

export async function joinCluster(options: LinkOptions): Promise<ClusterLink> {
  const identity = await loadIdentity(options.home);
  const serves = options.role !== 'viewer';
  const views = options.role !== 'node';
  const health = new ClusterHealth();
  const nc = await connectCluster({ ...options, inboxPrefix: inboxPrefixOf(options.user) });
  void watchStatus(nc.status(), health);
  const trust = new TrustList(options.home);
  const emitter = new EventEmitter<{ event: [NodeEvent] }>();
  const emit = (event: NodeEvent) => emitter.emit('event', event);

  const member = serves
    ? new Member({ nc, node: options.node, identity, trust, anyCaller: options.anyCaller, health, name: options.name, heartbeatMs: options.heartbeatMs })
    : null;
  const checkMs = Math.max(10, Math.min(250, Math.floor(options.heartbeatMs / 4)));
  const presence = views ? new Presence({ nc, selfId: member ? identity.id : null, keyId: identity.id, checkMs, health }) : null;
  const events = views ? new RemoteEvents(nc, member ? identity.id : null, health, emit) : null;
  const caller = views ? new Caller(nc, identity, inboxPrefixOf(options.user), health) : null;
  presence?.on('member', (card) => emit({ type: 'member', node: card.id, member: card }));
  // Listening first, so this node's own first heartbeat already lands in its table.
  presence?.start();
  events?.start();
  try {
    await member?.start();
  } catch (error) {
    await nc.close();
    throw error;
  }

  return {
    role: options.role,
    id: identity.id,
    member,
    presence,
    callTimeoutMs: options.callTimeoutMs,
    request: (id, data, timeoutMs) => caller!.request(id, data, timeoutMs),
    on: (event, listener) => emitter.on(event, listener),
    status: () => ({
      role: options.role,
      id: identity.id,
      key: identity.publicKey,
      trusted: trust.ids().length,
      openToAnyCaller: options.anyCaller,
      ...health.view(),
    }),
    close: async () => {
      presence?.close();
      events?.close();
      caller?.close();
      await member?.close();
      await nc.close();
    },
  };
}

/** The server's complaints (permission violations above all) reach the user, not only the client's internals. */
async function watchStatus(status: AsyncIterable<{ type: string; error?: Error }>, health: ClusterHealth): Promise<void> {
  for await (const event of status) {
    if (event.type === 'error' && event.error) health.violation(event.error.message);
  }
}
