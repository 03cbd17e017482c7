// Picks the source for a uri (resolving relative uris against the gallery's location) and tries mirrors in order.
import { readdir, rm } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import { HangarError } from '../../../shared/errors.ts';
import { httpSource } from './http-source.ts';
import { localSource } from './local-source.ts';
import type { BackendSource, FetchContext, FetchResult, SourceFactory, SourceOptions } from './source.ts';
import { messageOf } from '../../../shared/error-text.ts';

export const builtinSources: SourceFactory[] = [localSource, httpSource];

function resolveRelative(uri: string, options: SourceOptions): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(uri) || isAbsolute(uri)) return null;
  if (options.baseDir !== null) return resolve(options.baseDir, uri);
  if (options.baseUrl !== null) return new URL(uri, options.baseUrl).href;
  return null;
}

/** A gallery fetched over the network names what to download, never a file on this machine. */
function created(factory: SourceFactory, uri: string, options: SourceOptions): BackendSource {
  if (factory.local === true && options.baseUrl !== null) {
    throw new HangarError('bad-input', `"${uri}" is a local path, which a gallery from ${options.baseUrl} may not name`);
  }
  return factory.create(uri, options);
}

/** The first factory that takes `uri` as written, or else the first that takes it resolved against the gallery. */
export function sourceFor(uri: string, factories: SourceFactory[], options: SourceOptions): BackendSource {
  const direct = factories.find((f) => f.matches(uri));
  if (direct) return created(direct, uri, options);
  const resolved = resolveRelative(uri, options);
  const factory = resolved === null ? undefined : factories.find((f) => f.matches(resolved));
  if (factory && resolved !== null) return created(factory, resolved, options);
  throw new HangarError('bad-input', `no source can fetch "${uri}"`);
}

async function emptyDir(dir: string): Promise<void> {
  await Promise.all((await readdir(dir)).map((name) => rm(join(dir, name), { recursive: true, force: true })));
}

/** Fetches from the first uri that works (the entry's uri, then its mirrors); `servedBy` names the one that did. */
export async function fetchFromFirst(
  uris: string[],
  factories: SourceFactory[],
  options: SourceOptions,
  stagingDir: string,
  ctx: FetchContext,
): Promise<FetchResult> {
  if (uris.length === 0) throw new HangarError('bad-input', 'no uri to fetch from');
  const failures: { uri: string; err: unknown }[] = [];
  for (const uri of uris) {
    try {
      if (failures.length > 0) await emptyDir(stagingDir);
      const result = await sourceFor(uri, factories, options).fetchInto(stagingDir, ctx);
      return { ...result, servedBy: uri };
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      failures.push({ uri, err });
    }
  }
  if (failures.length === 1) throw failures[0]!.err;
  const codes = new Set(failures.map((f) => (f.err instanceof HangarError ? f.err.code : 'failed')));
  const code = codes.size === 1 ? [...codes][0]! : 'failed';
  throw new HangarError(code, `every source failed: ${failures.map((f) => `${f.uri}: ${messageOf(f.err)}`).join('; ')}`);
}
