// A local directory (copied) or a local tar/tar.gz file (extracted), named by an absolute path or file:// URL.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { HangarError } from '../../../shared/errors.ts';
import { localPathOf } from '../file-url.ts';
import { copyTree } from './copy-tree.ts';
import { DEFAULT_LIMITS } from './limits.ts';
import { OwnTreeGuard } from './own-trees.ts';
import type { BackendSource, FetchContext, FetchResult, SourceFactory } from './source.ts';
import { extractVerified } from './verified-extract.ts';

/** As the inflate chunks (extract.ts): each read is dropped before the next scavenge. */
const READ_CHUNK = 256 << 10;

class LocalSource implements BackendSource {
  constructor(
    readonly uri: string,
    private readonly path: string,
  ) {}

  async fetchInto(stagingDir: string, ctx: FetchContext): Promise<FetchResult> {
    const stats = await stat(this.path).catch((err: NodeJS.ErrnoException) => {
      throw err.code === 'ENOENT' ? new HangarError('not-found', `${this.path} does not exist`) : err;
    });
    if (stats.isDirectory()) {
      if (ctx.sha256 !== undefined) throw new HangarError('bad-input', `a sha256 is given, but ${this.path} is a directory and cannot be verified`);
      const guard = await OwnTreeGuard.of({ home: ctx.home, backendsDir: ctx.backendsDir });
      await guard.checkSource(this.path);
      await copyTree(this.path, stagingDir, {
        limits: ctx.limits ?? DEFAULT_LIMITS,
        signal: ctx.signal,
        onBytes: (bytes) => ctx.onProgress(bytes, null),
        guard,
      });
      return { sha256: null, digest: null, servedBy: this.uri };
    }
    if (!stats.isFile()) throw new HangarError('bad-input', `${this.path} is ${stats.isFIFO() ? 'a FIFO' : stats.isSocket() ? 'a socket' : 'a device'}, not an archive or a folder`);
    const input = createReadStream(this.path, { highWaterMark: READ_CHUNK });
    const sha256 = await extractVerified({ raw: input, totalBytes: stats.size, what: this.path }, stagingDir, ctx);
    return { sha256, digest: null, servedBy: this.uri };
  }
}

export const localSource: SourceFactory = {
  local: true,
  matches: (uri) => uri.startsWith('file://') || isAbsolute(uri),
  create: (uri) => new LocalSource(uri, uri.startsWith('file://') ? localPathOf(uri, `"${uri}"`) : uri),
};
