// The host's link to the cluster as its views say it: lost and retried, or refused for good once an admin revoked
// this machine.
import type { ClusterStatusView } from './types.ts';

/**
 * Why the link is down once an admin revoked this machine: the server closed its connection and refuses its
 * credential from then on, so the client's tries to reconnect are refused for good.
 */
export const REVOKED = "this machine was revoked from the cluster: the NATS server closed its connection and refuses its credential (hangar cluster members, on an admin, says when)";

/** Why the link is down, and whether it is tried again (never once revoked); null while it is up. */
export function linkLostWords(link: ClusterStatusView['link']): string | null {
  if (link.connected) return null;
  const reason = link.reason ?? 'no answer';
  return reason === REVOKED ? reason : `${reason}, retrying`;
}
