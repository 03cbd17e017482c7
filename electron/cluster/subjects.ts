// The cluster's NATS subjects. A node serves only subjects under its own id (`hangar cluster nats-config` writes
// permissions that enforce it); a viewer calls nodes and hears their cards and events.
export const PRESENCE_ALL = 'hangar.presence.*';
/** A viewer that joins asks every member for a heartbeat at once rather than wait for the next one. */
export const PRESENCE_QUERY = 'hangar.query.presence';
export const EVENTS_ALL = 'hangar.node.*.events';
export const CALLS_ALL = 'hangar.node.*.call';

export const presenceSubject = (id: string) => `hangar.presence.${id}`;
export const callSubject = (id: string) => `hangar.node.${id}.call`;
export const eventsSubject = (id: string) => `hangar.node.${id}.events`;

/** The node id a presence or node subject names (its third token). */
export const subjectNode = (subject: string): string => subject.split('.')[2] ?? '';

/**
 * Where a user's request replies arrive: only that user may subscribe there, so no one else reads them. A user name
 * that cannot be part of a subject keeps NATS's shared default.
 */
export const inboxPrefixOf = (user: string | undefined): string => (user && /^[A-Za-z0-9_-]{1,64}$/.test(user) ? `_INBOX_${user}` : '_INBOX');

/**
 * A member's inbox in a cluster joined by invitation: a token of its own under `_INBOX`, so that a node may answer
 * into any member's inbox (MEMBER_INBOXES: members join after it) and on no other subject a caller could name.
 */
export const memberInboxOf = (name: string): string => `_INBOX.${name}`;
export const MEMBER_INBOXES = '_INBOX.*.>';

/** A reply subject a node answers on: under NATS's shared inbox prefix or a user's own, and nothing else. */
export const isInboxSubject = (subject: string): boolean => /^_INBOX(_[A-Za-z0-9_-]{1,64})?\.[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(subject) && subject.length <= 256;

/**
 * The cluster's key-value buckets (JetStream streams KV_<name>): desired versions, rollouts, each node's convergence,
 * and the members admins invited (their grants, and each invitation's one use).
 */
export const BUCKETS = { desired: 'hangar-desired', rollouts: 'hangar-rollouts', status: 'hangar-status', members: 'hangar-members' } as const;
export type BucketName = (typeof BUCKETS)[keyof typeof BUCKETS];

/** The subject a value is written to under `key` in `bucket`. */
export const kvSubject = (bucket: BucketName, key: string) => `$KV.${bucket}.${key}`;
