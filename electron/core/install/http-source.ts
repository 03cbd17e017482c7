// An http(s) tarball, streamed through the hash and the extractor; never held in memory whole.
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { HangarError } from '../../../shared/errors.ts';
import { checkedUrl } from '../file-url.ts';
import type { BackendSource, FetchContext, FetchResult, SourceFactory } from './source.ts';
import { extractVerified } from './verified-extract.ts';

class HttpSource implements BackendSource {
  constructor(readonly uri: string) {}

  async fetchInto(stagingDir: string, ctx: FetchContext): Promise<FetchResult> {
    const response = await ctx.fetch(this.uri, { signal: ctx.signal });
    if (!response.ok || response.body === null) {
      await response.body?.cancel();
      throw new HangarError('failed', `${this.uri} answered HTTP ${response.status} ${response.statusText}`.trim());
    }
    const length = Number(response.headers.get('content-length'));
    const body = Readable.fromWeb(response.body as unknown as NodeReadableStream<Uint8Array>);
    const sha256 = await extractVerified({ raw: body, totalBytes: length > 0 ? length : null, what: this.uri }, stagingDir, ctx);
    return { sha256, digest: null, servedBy: this.uri };
  }
}

export const httpSource: SourceFactory = {
  matches: (uri) => /^https?:\/\//i.test(uri),
  create: (uri) => {
    checkedUrl(uri, `"${uri}"`);
    return new HttpSource(uri);
  },
};
