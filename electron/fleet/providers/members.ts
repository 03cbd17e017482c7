import { EventEmitter } from 'node:events';
import type { NodeRef } from '../../../shared/api.ts';
import { HangarError } from '../../../shared/errors.ts';
import type { NodeEvent } from '../../../shared/types.ts';
import type { ClusterLink } from '../../cluster/join.ts';
import type { NodeProvider } from '../provider.ts';
import { remoteCall } from './remote-call.ts';
import { remoteWaitJob } from './remote-wait.ts';

/** The cluster's other Hangar members, called over NATS. */
export function memberProvider(cluster: ClusterLink): NodeProvider {
  const events = new EventEmitter<{ event: [NodeEvent] }>();
  cluster.on('event', (event) => events.emit('event', event));
  return {
    kind: 'hangar-member',
    owns: (id) => cluster.presence?.has(id) ?? false,
    call: async (method, req) => {
      if (!cluster.presence) {
        throw new HangarError('forbidden', 'this host joined the cluster as a node only (--cluster-role node): it serves its own node and calls no other');
      }
      if (method === 'waitJob') return remoteWaitJob(cluster, req as NodeRef & { id: string }, events);
      return remoteCall(cluster, method, req);
    },
    cards: async () => {
      await cluster.presence?.look();
      return cluster.presence?.cards() ?? [];
    },
    onEvent: (listener) => events.on('event', listener),
    close: () => cluster.close(),
  };
}
