// What a home that joined the cluster by invitation (or made it, `hangar cluster init`) keeps: the cluster's URL and
// name, this machine's name and role there, the admins whose grants it takes, its labels, and its NATS credential
// (<home>/state/cluster.creds). Both files are owner-only. With them, `hangar agent` joins with no further option.
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import * as z from 'zod';
import { writeFileAtomic } from '../core/state-file.ts';
import { readOwnerJson, writeOwnerJson } from './owner-file.ts';
import { memberInboxOf } from './subjects.ts';

export const joinedFile = (home: string) => join(home, 'state', 'cluster-join.json');
export const credsFile = (home: string) => join(home, 'state', 'cluster.creds');

const joinedSchema = z.object({
  url: z.string(),
  cluster: z.string(),
  name: z.string(),
  role: z.enum(['node', 'viewer', 'node+viewer']),
  admins: z.array(z.string()),
  labels: z.record(z.string(), z.string()),
});

export type Joined = z.infer<typeof joinedSchema>;

/** This home's membership; null when it joined no cluster by invitation. */
export function readJoined(home: string): Promise<Joined | null> {
  return readOwnerJson(joinedFile(home), joinedSchema, 'move it away and join again with a new invitation (hangar cluster invite)');
}

/** The credential first, the membership last: a home holds a membership only once it holds all it needs. */
export async function writeJoined(home: string, joined: Joined, creds: string): Promise<void> {
  await mkdir(join(home, 'state'), { recursive: true, mode: 0o700 });
  await writeFileAtomic(credsFile(home), creds, { mode: 0o600 });
  await writeOwnerJson(joinedFile(home), joined);
}

export async function forgetJoined(home: string): Promise<void> {
  await rm(joinedFile(home), { force: true });
  await rm(credsFile(home), { force: true });
}

/** How a host joins with the membership its home holds (fleet/start.ts JoinOptions); null when it holds none. */
export async function joinedConnection(home: string) {
  const joined = await readJoined(home);
  if (!joined) return null;
  return {
    cluster: { url: joined.url, name: joined.name, credsFile: credsFile(home), inboxPrefix: memberInboxOf(joined.name), role: joined.role, roleFrom: `its invitation's role: hangar cluster invite --role ${joined.role}`, grantors: joined.admins },
    labels: joined.labels,
  };
}
