// The agent's stderr on its cluster link: a line when the NATS server is lost, one when it is back; not one per retry.
// A machine revoked from the cluster is told that, once, rather than that it lost the server.
import type { ClusterStatusView, NodeEvent } from '../../shared/types.ts';
import { REVOKED } from '../../shared/cluster-link.ts';
import type { Host } from '../fleet/start.ts';

type Link = ClusterStatusView['link'];

/** "lost the NATS server …" and "back on the NATS server …", as `write` prints them; returns the function that stops. */
export function logClusterLink(host: Pick<Host, 'on' | 'off'>, write: (line: string) => void): () => void {
  let lost: Link | null = null;
  const onEvent = (event: NodeEvent) => {
    if (event.type !== 'cluster-status' || event.status.role === null) return;
    const link = event.status.link;
    if (!link.connected && lost?.reason !== REVOKED && link.reason === REVOKED) {
      lost = link;
      // When it was revoked is the admin's to say: this machine knows when the server closed its connection.
      write(`hangar: cluster: this machine was revoked from the cluster: the NATS server closed its connection at ${link.since} and refuses its credential (hangar cluster members, on an admin, says when it was revoked); it goes on serving its own host alone, and joins again only with a new invitation\n`);
    } else if (!link.connected && lost === null) {
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
