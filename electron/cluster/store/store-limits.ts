// What each of the cluster's buckets is made with: one value per key, no value above what its records need, a cap on
// its keys and on its bytes (a writer that floods a bucket fills it, never a reader's memory), and no rollup header
// (a value sent with `Nats-Rollup` would otherwise purge every key of the bucket; Hangar never purges). No `max_age`:
// a pin is written once and stays in force for as long as its viewer leaves it, written again by no one.
import { BUCKETS, kvSubject, type BucketName } from '../subjects.ts';
import { RECORD_MAX_BYTES } from './sealed.ts';

export interface BucketLimits {
  /** The largest value it takes. */
  max_msg_size: number;
  /** How many keys it holds at most (one value each; a delete marker is one too). */
  max_msgs: number;
  max_bytes: number;
}

const MiB = 1024 * 1024;

export const BUCKET_LIMITS: Record<BucketName, BucketLimits> = {
  // A pin is under 1 KiB; one per backend per viewer.
  [BUCKETS.desired]: { max_msg_size: 16 * 1024, max_msgs: 4096, max_bytes: 64 * MiB },
  // A rollout over a thousand nodes is ~200 KiB; finished ones beyond the few kept leave a delete marker each, which an
  // admin's sweep removes (sweep.ts).
  [BUCKETS.rollouts]: { max_msg_size: RECORD_MAX_BYTES, max_msgs: 4096, max_bytes: 64 * MiB },
  // One key per node.
  [BUCKETS.status]: { max_msg_size: RECORD_MAX_BYTES, max_msgs: 1024, max_bytes: 64 * MiB },
  // A grant is under 1 KiB, one per machine an admin invited, and one mark per invitation used.
  [BUCKETS.members]: { max_msg_size: 4 * 1024, max_msgs: 4096, max_bytes: 16 * MiB },
};

/** The bucket's stream as @nats-io/kv would make it, but with these limits and rollups refused. */
export function bucketStreamConfig(bucket: BucketName) {
  return {
    name: `KV_${bucket}`,
    subjects: [kvSubject(bucket, '>')],
    retention: 'limits' as const,
    storage: 'file' as const,
    discard: 'new' as const,
    num_replicas: 1,
    max_msgs_per_subject: 1,
    allow_direct: true,
    allow_rollup_hdrs: false,
    deny_purge: true,
    ...BUCKET_LIMITS[bucket],
  };
}
