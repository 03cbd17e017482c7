// The same records for a host in no cluster, kept in its home; and the rollouts an earlier Hangar kept there
// (state/rollouts.json), read in either shape and moved into the cluster's store once the host joins one.
import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import { rolloutSchema } from '../../../shared/event-schema.ts';
import type { ClusterStatusView, RolloutView } from '../../../shared/types.ts';
import { CoalescedFile } from '../../core/coalesced-file.ts';
import { desiredBodySchema, desiredKey, rolloutRecordSchema, statusBodySchema, type DesiredBody, type RolloutRecord, type StatusBody } from './bodies.ts';
import { FileRecords, RecordConflict, type Records } from './records.ts';

export interface Stores {
  desired: Records<DesiredBody>;
  rollouts: Records<RolloutRecord>;
  status: Records<StatusBody>;
  view(): ClusterStatusView['store'];
  close(): void | Promise<void>;
}

export const rolloutsFile = (stateDir: string) => join(stateDir, 'rollouts.json');

/** A host alone signs nothing: what is in its own home is its own. */
export const HOME = { id: 'local', publicKey: 'local' };

export function homeStores(stateDir: string): Stores {
  const parse = <T>(schema: { safeParse(raw: unknown): { success: boolean; data?: T } }) => (raw: unknown) => {
    const parsed = schema.safeParse(raw);
    return parsed.success ? parsed.data! : null;
  };
  const desired = new FileRecords(join(stateDir, 'desired.json'), (v) => desiredKey(v.backend, HOME.id), HOME, parse<DesiredBody>(desiredBodySchema));
  const rollouts = new FileRecords(rolloutsFile(stateDir), (v) => v.rollout.id, HOME, readRolloutRecord);
  const status = new FileRecords(join(stateDir, 'convergence.json'), (v) => v.node, HOME, parse<StatusBody>(statusBodySchema));
  return {
    desired,
    rollouts,
    status,
    view: () => ({ available: true, reason: null }),
    close: async () => {
      await Promise.all([desired, rollouts, status].map((r) => r.flush().catch(() => undefined)));
    },
  };
}

/** A stored rollout: a record, or a view as Hangar kept them before rollouts had a version and a coordinator. */
export function readRolloutRecord(raw: unknown): RolloutRecord | null {
  const record = rolloutRecordSchema.safeParse(raw);
  if (record.success) return record.data;
  if (typeof raw !== 'object' || raw === null) return null;
  const old = raw as Partial<RolloutView>;
  const view = rolloutSchema.safeParse({
    version: old.nodes?.find((n) => n.to)?.to ?? null,
    on: 'all',
    coordinator: { id: 'local', name: 'this host' },
    interrupted: null,
    ...old,
  });
  return view.success ? { rollout: view.data, heartbeatMs: 2000, previous: null, beat: 0 } : null;
}

/**
 * Moves the rollouts kept in the home into the cluster's store (each only if the store has none by that id), then
 * sets the file aside: from then on the cluster keeps them. Returns how many were moved.
 */
export async function migrateRollouts(stateDir: string, records: Records<RolloutRecord>): Promise<number> {
  const file = new CoalescedFile<unknown>(rolloutsFile(stateDir));
  const raw = await file.read();
  if (!Array.isArray(raw)) return 0;
  let moved = 0;
  for (const item of raw) {
    const record = readRolloutRecord(item);
    if (!record) continue;
    try {
      await records.create(record.rollout.id, record);
      moved++;
    } catch (error) {
      // Already there is fine; the store out of reach is not: the file stays for the next start.
      if (!(error instanceof RecordConflict)) return moved;
    }
  }
  await rename(file.path, `${file.path}.migrated`);
  return moved;
}
