import { HangarError } from '../../../shared/errors.ts';
import type { NodeCard } from '../../../shared/types.ts';
import type { LocalAiConnection } from '../../localai/connection.ts';
import type { WorkerRequest } from '../../localai/worker-node.ts';
import type { NodeProvider } from '../provider.ts';

/** The workers of the LocalAI cluster this host manages, each a node of its own over LocalAI's worker protocol. */
export function workerProvider(connection: LocalAiConnection): NodeProvider {
  const owns = (id: string) => connection.link()?.has(id) ?? false;
  return {
    kind: 'localai-worker',
    owns,
    call: async (method, req) => {
      const link = connection.link();
      if (!link) throw new HangarError('not-found', `no LocalAI worker ${req.node}`);
      return link.call(method, req as WorkerRequest);
    },
    cards: async () => connection.link()?.cards() ?? [],
    // A Hangar node on a worker's machine and backends directory names that worker.
    describe: (cards: NodeCard[]) => {
      const link = connection.link();
      if (!link) return cards;
      return cards.map((card) => {
        const worker = owns(card.id) ? null : link.pairOf(card.id);
        return worker ? { ...card, pairedWorker: worker } : card;
      });
    },
    onEvent: (listener) => connection.on('event', listener),
    close: () => connection.close(),
  };
}
