import { randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { nodeId } from '../../shared/schemas.ts';

export const nodeIdFile = (home: string) => join(home, 'state', 'node-id');

/** The node's id in the cluster: made once, kept in the home, so a restarted node is the same member. */
export async function ensureNodeId(home: string): Promise<string> {
  const file = nodeIdFile(home);
  const existing = await readFile(file, 'utf8').then((text) => text.trim(), () => null);
  if (existing) {
    if (!nodeId.safeParse(existing).success) throw new Error(`${file} does not hold a node id: delete it to make a new one`);
    return existing;
  }
  const id = randomUUID().slice(0, 13).replace('-', '');
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  await writeFile(file, id + '\n', { mode: 0o600 });
  return id;
}
