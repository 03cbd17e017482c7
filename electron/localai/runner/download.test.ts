// A LocalAI binary bigger than any LocalAI binary is refused, whether its size is announced or only streamed, and
// nothing is left behind: real HTTP from a loopback server, a real directory.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { serve } from '../../core/install/testdata/fixtures.ts';
import { downloadRelease } from './download.ts';
import { releaseFiles } from './release.ts';

const PLATFORM = 'linux-amd64';
const CAP = 64 * 1024;
const binary = Buffer.alloc(CAP + 1, 7);
const sha = createHash('sha256').update(binary).digest('hex');

let dir: string;
let server: Awaited<ReturnType<typeof serve>>;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hangar-localai-download-'));
  server = await serve((req, res) => {
    const url = req.url ?? '';
    if (url.endsWith('-checksums.txt')) return void res.end(`${sha}  ${url.includes('v3.0.0') ? 'local-ai-v3.0.0' : 'local-ai-v3.0.1'}-${PLATFORM}\n`);
    // v3.0.0 announces its size; v3.0.1 streams it in chunks with no length said.
    if (url.includes('v3.0.0')) return void res.writeHead(200, { 'content-length': binary.length }).end(binary);
    res.writeHead(200);
    for (let at = 0; at < binary.length; at += 4096) res.write(binary.subarray(at, at + 4096));
    res.end();
  });
});

after(async () => {
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

for (const [version, how] of [['3.0.0', 'announced'], ['3.0.1', 'streamed']] as const) {
  test(`a binary over the cap is refused when its size is ${how}, and nothing is left`, async () => {
    await assert.rejects(downloadRelease(releaseFiles(server.url, version, PLATFORM), dir, fetch, undefined, CAP), (error: Error) => {
      assert.match(error.message, new RegExp(`^refused LocalAI v${version.replaceAll('.', '\\.')}: local-ai-v${version.replaceAll('.', '\\.')}-${PLATFORM} is over 65,536 bytes, more than a LocalAI binary is; nothing was installed$`));
      return true;
    });
    assert.deepEqual(await readdir(dir), []);
  });
}

test('the same binary under a cap it fits is installed, its sha256 checked', async () => {
  const build = await downloadRelease(releaseFiles(server.url, '3.0.0', PLATFORM), dir, fetch, undefined, CAP + 1);
  assert.deepEqual([build.tag, build.sha256], ['v3.0.0', sha]);
  assert.deepEqual(await readdir(dir), ['local-ai-v3.0.0']);
});
