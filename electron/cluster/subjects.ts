// The cluster's NATS subjects. A node serves only subjects under its own id (docs/nats-cluster.conf enforces it).
export const PRESENCE_ALL = 'hangar.presence.*';
/** A viewer that joins asks every member for a heartbeat at once rather than wait for the next one. */
export const PRESENCE_QUERY = 'hangar.query.presence';
export const EVENTS_ALL = 'hangar.node.*.events';

export const presenceSubject = (id: string) => `hangar.presence.${id}`;
export const callSubject = (id: string) => `hangar.node.${id}.call`;
export const eventsSubject = (id: string) => `hangar.node.${id}.events`;
