// A node's look at a gallery's location before it adds it: read and parsed as it will be read, so what would fail
// then is refused at once.
import { readFile, stat } from 'node:fs/promises';
import { messageOf, oneLine } from '../../../shared/error-text.ts';
import { STARTER_LOCATION } from '../../../shared/schemas.ts';
import { hidePasswords } from '../../../shared/url-password.ts';
import { DownloadError, guardedFetch } from '../net/index.ts';
import { parseLocation } from './location.ts';
import { GALLERY_MAX_BYTES, mebibytes } from './parse.ts';
import { snapshotFromText } from './snapshot.ts';
import { readCapped } from './url-gallery.ts';

const CHECK_TIMEOUT_MS = 10_000;

/** A failed read's reason alone, "permission denied" of "EACCES: permission denied, open '/x'": the line names the path. */
function systemReason(error: unknown): string {
  return /^[A-Z0-9]+: (.+?), \w+ '/.exec(messageOf(error))?.[1] ?? oneLine(error);
}

const checkFetch = guardedFetch(fetch, { headersMs: CHECK_TIMEOUT_MS });

/** Why the gallery at `location` cannot be read now, or null. A URL is asked for (a 404 is refused). The starter gallery is the node's own. */
export async function galleryLocationProblem(location: string): Promise<string | null> {
  if (location === STARTER_LOCATION) return null;
  const parsed = parseLocation(location);
  let text: string;
  if (parsed.kind === 'url') {
    const shown = hidePasswords(location);
    let response: Response;
    try {
      response = await checkFetch(location, { signal: AbortSignal.timeout(CHECK_TIMEOUT_MS) });
    } catch (error) {
      return `${shown} cannot be reached: ${error instanceof DownloadError ? error.reason : oneLine(error)}`;
    }
    if (!response.ok) {
      await response.body?.cancel();
      return `${shown} answers ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
    }
    try {
      text = await readCapped(response, GALLERY_MAX_BYTES);
    } catch (error) {
      return `${shown}: ${oneLine(error)}`;
    }
  } else {
    try {
      const found = await stat(parsed.path);
      if (!found.isFile()) return `${parsed.path} is not a file`;
      if (found.size > GALLERY_MAX_BYTES) return `${parsed.path} is ${mebibytes(found.size)}, over the ${mebibytes(GALLERY_MAX_BYTES)} limit`;
      text = await readFile(parsed.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return `${parsed.path} does not exist`;
      return `${parsed.path} cannot be read: ${systemReason(error)}`;
    }
  }
  return (await snapshotFromText(text, { gallery: hidePasswords(location), baseDir: null, baseUrl: null })).failure;
}
