// When a LocalAI worker and a Hangar node are one machine on one backends directory, they are shown as one machine and
// Hangar's own actions apply. LocalAI's protocol names neither the worker's machine nor its backends path, so the rule
// rests on what both sides do report:
//   1. the same machine: the host of the worker's registered address (LocalAI's default is the worker's hostname) is
//      the Hangar node's hostname, or one of its network addresses;
//   2. the same directory: the worker's backend.list and the Hangar node's listing of its backends directory hold the
//      same concrete backends with the same version, digest and installed_at (LocalAI writes installed_at to the second
//      at each install, so two directories agree on it only when they are one), and at least one.
// A worker with no backend yet is never paired: nothing tells its directory apart.
import type { BackendView, NodeCard, NodeInfo } from '../../shared/types.ts';
import type { WorkerBackend } from './protocol.ts';

export interface PairingHangarNode {
  card: NodeCard;
  info: Pick<NodeInfo, 'addresses'>;
  backends: BackendView[];
}

/** The host part of a `host:port` address (IPv6 in brackets), lower-cased. */
export function addressHost(address: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(address);
  if (bracketed) return bracketed[1]!.toLowerCase();
  const colons = address.split(':').length - 1;
  return (colons === 1 ? address.slice(0, address.lastIndexOf(':')) : address).toLowerCase();
}

/** Rule 1: the worker registered an address on this Hangar node's machine. */
export function sameMachine(workerAddress: string, node: Pick<PairingHangarNode, 'card' | 'info'>): boolean {
  const host = addressHost(workerAddress);
  if (!host) return false;
  const names = [node.card.host, node.card.host.split('.')[0]!, ...node.info.addresses].map((n) => n.toLowerCase());
  return names.includes(host) || names.includes(host.split('.')[0]!);
}

/** Rule 2: both list the same concrete backends, installed at the same second, with the same version and digest. */
export function sameDirectory(worker: WorkerBackend[], node: BackendView[]): boolean {
  const theirs = worker.filter((r) => !r.is_meta && !r.is_system).map((r) => key(r.name, r.version, r.digest, r.installed_at));
  const ours = node.filter((b) => b.kind === 'backend' && b.metaBackendFor === null).map((b) => key(b.name, b.version, b.digest, b.installedAt));
  if (theirs.length === 0 || theirs.length !== ours.length) return false;
  const set = new Set(ours);
  return theirs.every((k) => set.has(k));
}

function key(name: string, version: string | null, digest: string | null, installedAt: string | null): string {
  return JSON.stringify([name, version || '', digest || '', installedAt || '']);
}
