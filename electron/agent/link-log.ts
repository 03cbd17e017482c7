// The agent's stderr on its cluster link: a line when the NATS server is lost, one when it is back; not one per retry.
import type { ClusterStatusView, NodeEvent } from '../../shared/types.ts';
import type { Host } from '../fleet/start.ts';

type Link = ClusterStatusView['link'];

/** "lost the NATS server …" and "back on the NATS server …", as `write` prints them; returns the function that stops. */
export function logClusterLink(host: Pick<Host, 'on' | 'off'>, write: (line: string) => void): () => void {
  let lost: Link | null = null;
  const onEvent = (event: NodeEvent) => {
    if (event.type !== 'cluster-status' || event.status.role === null) return;
    const link = event.status.link;
    if (!link.connected && lost === null) {
      lost = link;
      write(`hangar: cluster: lost the NATS server at ${link.since}: ${link.reason ?? 'no answer'}; retrying\n`);
    } else if (link.connected && lost !== null) {
      const awayS = (Date.parse(link.since) - Date.parse(lost.since)) / 1000;
      lost = null;
      write(`hangar: cluster: back on the NATS server at ${link.since}, after ${awayS.toFixed(1)} s without it\n`);
    }
  };
  host.on('event', onEvent);
  return () => host.off('event', onEvent);
}
