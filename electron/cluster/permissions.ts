// What each role may publish and subscribe to on the cluster's NATS server, whether the server's configuration lists
// its users with passwords (nats-config.ts) or their JWTs carry it (operator-jwts.ts), and the store's services the
// users' account imports from the account that holds the buckets. A node may serve only its own subjects; a viewer may
// call and listen, and read only its own inbox. In the store a viewer makes the buckets and writes desired versions
// (under its own key id) and rollout records; a node reads those two and writes only its own convergence status; an
// admin alone writes grants (store/grants.ts) and may remove a stored value (store/sweep.ts). Every host reads the
// grants. No role may make a JetStream consumer, or reach any other JetStream API.
import { MACHINE_NAME_PATTERN } from '../../shared/names.ts';
import { parsePublicKey } from './node-key.ts';
import { BUCKET_LIMITS } from './store/store-limits.ts';
import {
  BUCKETS, CALLS_ALL, callSubject, EVENTS_ALL, eventsSubject, inboxPrefixOf, kvSubject, PRESENCE_ALL, PRESENCE_QUERY, presenceSubject, type BucketName,
} from './subjects.ts';
import { HangarError } from '../../shared/errors.ts';


/** Throws one line unless `name` is usable as a machine's name. */
export function checkMachineName(name: string): string {
  if (!MACHINE_NAME_PATTERN.test(name)) throw new HangarError('bad-input', `"${name.slice(0, 80)}" is not a usable name: letters, digits, "_" and "-", at most 64`);
  return name;
}

/** A machine's roles: a node has an id, a viewer may be given with its key, an admin is a viewer. */
export interface MachineRoles {
  name: string;
  nodeId: string | null;
  viewerKey: string | null;
  viewer: boolean;
  admin: boolean;
}

export interface Permissions {
  publish: string[];
  subscribe: string[];
}

/** Reading a bucket: which keys it holds (its stream's info), a key's value (a direct get), its writes as they happen. */
function readsBucket(bucket: BucketName): Permissions {
  const stream = `KV_${bucket}`;
  return { publish: [`$JS.API.STREAM.INFO.${stream}`, `$JS.API.DIRECT.GET.${stream}.>`], subscribe: [kvSubject(bucket, '>')] };
}

/**
 * What a machine may do; one with several roles gets each. `answers` are the inboxes a node may answer calls in (the
 * viewers'), `inbox` where this machine's own replies arrive (only it may read there).
 */
export function permissionsOf(m: MachineRoles, answers: string[], inbox = inboxPrefixOf(m.name)): Permissions {
  const p: Permissions = { publish: [], subscribe: [] };
  const add = (more: Permissions) => (p.publish.push(...more.publish), p.subscribe.push(...more.subscribe));
  add(readsBucket(BUCKETS.members));
  if (m.nodeId) {
    p.publish.push(presenceSubject(m.nodeId), eventsSubject(m.nodeId), kvSubject(BUCKETS.status, m.nodeId), ...answers);
    add(readsBucket(BUCKETS.desired));
    add(readsBucket(BUCKETS.rollouts));
    p.subscribe.push(callSubject(m.nodeId), PRESENCE_QUERY, `${inbox}.>`);
  }
  if (m.viewer) {
    p.publish.push(CALLS_ALL, PRESENCE_QUERY);
    for (const bucket of Object.values(BUCKETS)) {
      add(readsBucket(bucket));
      // Made by each viewer that joins (idempotent).
      p.publish.push(`$JS.API.STREAM.CREATE.KV_${bucket}`);
    }
    // A viewer writes its desired versions under its own key id only, when its key is known here.
    const viewerId = (m.viewerKey ? parsePublicKey(m.viewerKey)?.id : null) ?? m.nodeId;
    p.publish.push(kvSubject(BUCKETS.desired, viewerId ? `*.${viewerId}` : '>'), kvSubject(BUCKETS.rollouts, '>'));
    p.subscribe.push(PRESENCE_ALL, EVENTS_ALL, `${inbox}.>`);
  }
  // Removes a stored value outright by its sequence, whoever wrote it: the admin's sweep alone. Grants: admins alone.
  if (m.admin) p.publish.push(...SWEPT.map(sweepService), kvSubject(BUCKETS.members, '*'));
  return { publish: [...new Set(p.publish)], subscribe: [...new Set(p.subscribe)] };
}

/** The buckets an admin sweeps; a node writes only its own status, so junk never piles up there. */
const SWEPT = [BUCKETS.desired, BUCKETS.rollouts];
const sweepService = (bucket: BucketName) => `$JS.API.STREAM.MSG.DELETE.KV_${bucket}`;
/** An admin removes what its key does not take once it has been stored an hour. */
export const SWEEP_AFTER_SECONDS = 3600;

/**
 * Every service of the store the users' account may reach; each user's permissions then narrow it to its role. No
 * user may publish `$JS.API.INFO`: its import only tells nats-server (2.9) that the account's JetStream is the store's;
 * without it the server answers every `$JS.API` request there "JetStream not enabled for account" itself.
 */
export function storeServices(): string[] {
  return ['$JS.API.INFO', ...SWEPT.map(sweepService), ...Object.values(BUCKETS).flatMap((bucket) => [
    `$JS.API.STREAM.INFO.KV_${bucket}`,
    `$JS.API.DIRECT.GET.KV_${bucket}.>`,
    `$JS.API.STREAM.CREATE.KV_${bucket}`,
    kvSubject(bucket, '>'),
  ])];
}

/** JetStream's limits for the store's account: its buckets and their caps (store-limits.ts), nothing more. */
export const STORE_FILE_BYTES = Object.values(BUCKET_LIMITS).reduce((sum, limits) => sum + limits.max_bytes, 0);
export const STORE_STREAMS = Object.keys(BUCKETS).length;
