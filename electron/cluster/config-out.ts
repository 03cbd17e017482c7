// Where a server configuration is written, and the folders its server fills beside it, must be new: an --out naming a
// running cluster's nats.conf would otherwise replace its operator, accounts and revocations, and point a second
// cluster at the first one's store.
import { stat } from 'node:fs/promises';
import { HangarError } from '../../shared/errors.ts';

/** Refuses the first of `paths` that exists (a file or a folder), before anything is written. */
export async function refuseExisting(paths: string[]): Promise<void> {
  for (const path of paths) {
    const found = await stat(path).catch(() => null);
    if (!found) continue;
    const what = found.isDirectory() ? 'store' : 'configuration';
    throw new HangarError('conflict', `${path} exists: it may be a running cluster's ${what}; choose another --out or remove it`);
  }
}
