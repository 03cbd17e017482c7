import * as z from 'zod';
import { nodeCountsSchema, nodeResourcesSchema } from '../../shared/event-schema.ts';
import { nodeId, nodeLabels } from '../../shared/schemas.ts';

const text = z.string().max(256);
/** A node's card lists the viewer keys it trusts, by id; more than this is not a small cluster's trust list. */
export const TRUSTS_LISTED = 256;

/** What a member publishes on its presence subject every heartbeat, signed with its key. */
export const heartbeatSchema = z.object({
  id: nodeId,
  name: text,
  host: text,
  platform: text,
  arch: text,
  capability: text,
  version: text,
  counts: nodeCountsSchema,
  labels: nodeLabels,
  cordoned: z.boolean(),
  resources: nodeResourcesSchema.nullable(),
  heartbeatMs: z.number().int().min(10).max(600_000),
  /** The ids of the viewer keys this node acts for. */
  trusts: z.array(z.string().regex(/^[0-9a-f]{16}$/)).max(TRUSTS_LISTED),
  /** Started with --insecure-any-caller. */
  open: z.boolean(),
  /** Set on the last heartbeat of a node that shuts down. */
  leaving: z.boolean().optional(),
});

export type Heartbeat = z.infer<typeof heartbeatSchema>;

/**
 * A card as it goes on the wire: its trust list only when it changed since the card before, or when the card answers
 * a viewer's question (the viewer keeps the list it was last told).
 */
export const cardSchema = heartbeatSchema.extend({ trusts: heartbeatSchema.shape.trusts.optional() });

/** A member is offline once this many heartbeats in a row are missing. */
export const MISSED_HEARTBEATS = 3;
