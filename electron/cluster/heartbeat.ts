import { z } from 'zod';
import { nodeId } from '../../shared/schemas.ts';
import type { BackendView, NodeCounts } from '../../shared/types.ts';

const text = z.string().max(256);
const count = z.number().int().min(0);

/** What a member publishes on its presence subject every heartbeat. */
export const heartbeatSchema = z.object({
  id: nodeId,
  name: text,
  host: text,
  platform: text,
  arch: text,
  capability: text,
  version: text,
  counts: z.object({ backends: count, processes: count, stale: count, upgradable: count }),
  heartbeatMs: z.number().int().min(10).max(600_000),
  /** Set on the last heartbeat of a node that shuts down. */
  leaving: z.boolean().optional(),
});

export type Heartbeat = z.infer<typeof heartbeatSchema>;

/** A member is offline once this many heartbeats in a row are missing. */
export const MISSED_HEARTBEATS = 3;

export function countsOf(backends: BackendView[]): NodeCounts {
  const processes = backends.flatMap((b) => b.processes);
  return {
    backends: backends.length,
    processes: processes.length,
    stale: processes.filter((p) => p.cwd === 'stale').length,
    upgradable: backends.filter((b) => b.upgradable).length,
  };
}
