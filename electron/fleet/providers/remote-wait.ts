import type { EventEmitter } from 'node:events';
import type { NodeRef } from '../../../shared/api.ts';
import { HangarError } from '../../../shared/errors.ts';
import type { JobView, NodeEvent } from '../../../shared/types.ts';
import type { ClusterLink } from '../../cluster/join.ts';
import { NodeUnreachable } from '../../cluster/request-failure.ts';
import { labelOf, remoteCall } from './remote-call.ts';

const TERMINAL_JOB_STATES = new Set(['done', 'failed', 'cancelled']);

/**
 * Waits for a job on another node without one long request: the job's events usually end the wait, and a periodic
 * `jobs` call both backs them up and notices a node that stopped answering. The wait watches the cluster while it
 * lasts, so it outlives what the cluster outlives:
 * - a broker outage: the job's end may have been told while it lasted, so the node is asked again as soon as the link
 *   is back;
 * - a node not answering (still reconnecting after an outage, or its agent restarting): it is asked again when it is
 *   heard from, and the wait ends with the error only once the cluster says the node is offline.
 */
export function remoteWaitJob(cluster: ClusterLink, req: NodeRef & { id: string }, events: EventEmitter<{ event: [NodeEvent] }>): Promise<JobView> {
  return new Promise<JobView>((resolve, reject) => {
    const presence = cluster.presence;
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    let linked = cluster.status().link.connected;
    /** The newest poll: an older one still under way was asked before what called this one, so its answer is not used. */
    let newest = 0;
    /** The node did not answer: what it said last, until it is heard from again. */
    let silent: Error | null = null;
    const settle = (finish: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      events.off('event', onEvent);
      unwatch?.();
      finish();
    };
    const onHeard = (id: string) => {
      if (id !== req.node || silent === null) return;
      silent = null;
      void poll();
    };
    const onEvent = (event: NodeEvent) => {
      if (event.type === 'job' && event.node === req.node && event.job.id === req.id && TERMINAL_JOB_STATES.has(event.job.state)) {
        settle(() => resolve(event.job));
      } else if (event.type === 'member' && event.node === req.node && event.member.status === 'offline') {
        // Gone quiet: either it did not answer already, or it is asked at once rather than at the next poll.
        const error = silent;
        if (error) settle(() => reject(offline(error, event.member.reason)));
        else void poll();
      } else if (event.type === 'cluster-status') {
        const back = event.status.link.connected && !linked;
        linked = event.status.link.connected;
        if (back) void poll();
      }
    };
    const poll = async () => {
      const mine = ++newest;
      clearTimeout(timer);
      try {
        const jobs = (await remoteCall(cluster, 'jobs', { node: req.node })) as JobView[];
        if (mine !== newest) return;
        const job = jobs.find((j) => j.id === req.id);
        if (!job) return settle(() => reject(new HangarError('not-found', `no job ${req.id} on node ${labelOf(cluster, req.node)}`)));
        if (TERMINAL_JOB_STATES.has(job.state)) return settle(() => resolve(job));
        if (!settled) timer = setTimeout(() => void poll(), cluster.callTimeoutMs);
      } catch (error) {
        if (mine !== newest) return;
        if (!(error instanceof NodeUnreachable) || !presence?.has(req.node)) return settle(() => reject(error as Error));
        // Without the broker no node can answer: the link's return asks again.
        if (!linked) return;
        const card = presence.card(req.node);
        if (card.status === 'offline') return settle(() => reject(offline(error, card.reason)));
        silent = error;
      }
    };
    events.on('event', onEvent);
    const unwatch = presence?.watch(onHeard);
    void poll();
  });
}

function offline(unanswered: Error, reason: string | null): NodeUnreachable {
  return new NodeUnreachable(`${unanswered.message}; the cluster says it is offline (${reason ?? 'no heartbeat'})`);
}
