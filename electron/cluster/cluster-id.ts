// Which cluster a host is in, learned without believing anything the cluster's store holds: `hangar cluster
// nats-config` names the server "hangar-" and 24 random hex digits (`server_name`), and the server says its name in the
// INFO it sends every client as it connects. Every record and every call is signed for that name, so what was signed
// in one cluster means nothing in another that trusts the same keys. A server set up before it was named (its name is
// then its server id, made anew at each start) binds nothing: records and calls are signed for the empty name, as
// they were before (the README says how to name it).
import { randomBytes } from 'node:crypto';

const CLUSTER_NAME = /^hangar-[0-9a-f]{24}$/;

/** A new cluster's name, for its server's configuration. */
export function newClusterName(): string {
  return `hangar-${randomBytes(12).toString('hex')}`;
}

/** The cluster a connection's server names; '' when it names none Hangar made. */
export function clusterOf(info: { server_name?: string } | undefined): string {
  const name = info?.server_name ?? '';
  return CLUSTER_NAME.test(name) ? name : '';
}
