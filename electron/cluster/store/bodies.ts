// What each bucket holds, as its readers check it.
import * as z from 'zod';
import { nodeConvergenceSchema, rolloutSchema } from '../../../shared/event-schema.ts';
import { backendName, nodeId, selectorText, versionText } from '../../../shared/schemas.ts';
import type { NodeConvergence, RolloutView } from '../../../shared/types.ts';
import { HangarError } from '../../../shared/errors.ts';

/** A backend's desired version; `version` null is an unpin, kept so an older pin cannot be written back over it. */
export interface DesiredBody {
  backend: string;
  version: string | null;
  on: string;
  installMissing: boolean;
  rollout: string | null;
}

/**
 * Each writer keeps its desired version of a backend under its own key, `BACKEND/WRITER` (its key id; empty for a
 * record an earlier Hangar kept under the backend alone): one viewer's value never overwrites another's, and the one
 * in force is the newest its reader takes.
 */
export const desiredKey = (backend: string, writer: string) => `${backend}/${writer}`;
export const backendOfKey = (key: string) => key.slice(0, key.lastIndexOf('/'));
export const writerOfKey = (key: string) => key.slice(key.lastIndexOf('/') + 1);

export const desiredBodySchema: z.ZodType<DesiredBody> = z.object({
  backend: backendName,
  version: versionText.nullable(),
  on: selectorText,
  installMissing: z.boolean(),
  rollout: z.string().max(64).nullable(),
});

/** A rollout as its coordinator keeps it: the view, how often it is refreshed, and the pin it replaced. */
export interface RolloutRecord {
  rollout: RolloutView;
  /** The coordinator writes the record at least this often while it runs it. */
  heartbeatMs: number;
  /** The desired version before the rollout recorded its own (given back when it halts or is rolled back). */
  previous: DesiredBody | null;
  /** Grows with each refresh, so a refresh is a change every reader sees. */
  beat: number;
}

export const rolloutRecordSchema: z.ZodType<RolloutRecord> = z.object({
  rollout: rolloutSchema,
  heartbeatMs: z.number().int().min(10).max(600_000),
  previous: desiredBodySchema.nullable(),
  beat: z.number().int().min(0),
});

/** How a node stands against every desired version that names it, as it says itself. */
export interface StatusBody {
  node: string;
  convergence: NodeConvergence[];
}

export const statusBodySchema: z.ZodType<StatusBody> = z.object({
  node: nodeId,
  convergence: z.array(nodeConvergenceSchema).max(10_000),
});

/** A rollout someone runs, or that waits for a viewer to resume or roll it back. */
export function isActive(rollout: RolloutView): boolean {
  return rollout.state === 'running' || rollout.state === 'rolling-back' || rollout.state === 'interrupted';
}

/** Why another rollout or a pin of the backend waits for this active one, and what ends it. */
export function activeRefusal(rollout: RolloutView): HangarError {
  const what = `rollout ${rollout.id} of ${rollout.backend}`;
  if (rollout.state === 'interrupted') return new HangarError('conflict', `${what} is interrupted: it must end first (hangar resume --rollout ${rollout.id}, or hangar rollback --rollout ${rollout.id})`);
  return new HangarError('conflict', `${what} is ${rollout.state}, run by ${rollout.coordinator.name}: wait for it to end (hangar rollouts)`);
}

/**
 * Whether an active rollout still has work to do on this node: upgrading it, or rolling it back. A node it is done
 * with (or passed by) is its own again.
 */
export function touches(rollout: RolloutView, nodeId: string): boolean {
  if (!isActive(rollout)) return false;
  const step = rollout.nodes.find((n) => n.id === nodeId)?.step;
  return rollingBack(rollout) ? step === 'upgraded' : step === 'pending' || step === 'upgrading';
}

/** A rollout being undone: rolling back, or interrupted while it was. */
export function rollingBack(rollout: RolloutView): boolean {
  return rollout.state === 'rolling-back' || rollout.interrupted?.while === 'rolling-back';
}
