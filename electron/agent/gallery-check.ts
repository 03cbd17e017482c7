// `hangar galleries add`'s look at a location before the node is told to read it. Loaded only by that command: it
// brings the gallery's code with it.
import { stat } from 'node:fs/promises';
import { STARTER_LOCATION } from '../../shared/schemas.ts';
import { parseLocation } from '../core/gallery/index.ts';
import { fetchFailureReason } from '../core/net/index.ts';

const CHECK_TIMEOUT_MS = 10_000;

/**
 * Why the gallery at `location` cannot be read now, or null. A URL is asked for (a 404 is refused); a path is looked
 * at only when it names a file on this machine, where the agent reads it. The starter gallery is the agent's own.
 */
export async function galleryLocationProblem(location: string, { pathsAreHere }: { pathsAreHere: boolean }): Promise<string | null> {
  if (location === STARTER_LOCATION) return null;
  const parsed = parseLocation(location);
  if (parsed.kind === 'url') {
    try {
      const response = await fetch(location, { signal: AbortSignal.timeout(CHECK_TIMEOUT_MS) });
      await response.body?.cancel();
      return response.ok ? null : `${location} answers ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
    } catch (error) {
      return `${location} cannot be reached: ${fetchFailureReason(error, location)}`;
    }
  }
  if (!pathsAreHere) return null;
  const found = await stat(parsed.path).catch(() => null);
  return found === null ? `${parsed.path} does not exist` : found.isFile() ? null : `${parsed.path} is not a file`;
}
