// The desktop app's first step on its home: take the home's lock, or, when another Hangar already serves the
// home, say which one and offer its UI instead. No Electron here, so it is tested against real agents.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { HomeBusyError, lockHome, type HomeLock } from '../core/home-lock.ts';

export type DesktopHome =
  | { kind: 'owner'; lock: HomeLock }
  /** openUrl: the running agent's UI (with the home's token when it uses one), or null for a host without a UI. */
  | { kind: 'busy'; message: string; openUrl: string | null };

export async function claimDesktopHome(home: string): Promise<DesktopHome> {
  try {
    return { kind: 'owner', lock: await lockHome(home) };
  } catch (error) {
    if (!(error instanceof HomeBusyError)) throw error;
    const { url } = error.holder;
    const token = url ? await homeToken(home) : null;
    return { kind: 'busy', message: error.message, openUrl: url && token ? `${url}/#token=${token}` : url };
  }
}

/** The token an agent keeps in the home (read only: the home belongs to the other host). */
async function homeToken(home: string): Promise<string | null> {
  try {
    return (await readFile(join(home, 'state', 'token'), 'utf8')).trim() || null;
  } catch {
    return null;
  }
}
