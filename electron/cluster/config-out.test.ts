// `cluster init` and `cluster nats-config` never write over a server configuration, nor point a new cluster at the
// folders a running one keeps beside its own: one line, exit 4, and the file and the home as they were.
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { tempDir } from '../core/testing/fixtures.ts';
import { cli } from '../agent/test-agent.ts';

const URL = 'nats://127.0.0.1:28190';
const LIVE = 'listen: "127.0.0.1:28190"\n# the live cluster\'s operator, accounts and revocations\n';

describe('a server configuration is written only where none is', () => {
  let root: string;

  before(async () => {
    root = await tempDir('config-out');
  });

  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  async function refused(dir: string, args: string[], path: string): Promise<void> {
    const home = join(dir, 'fresh');
    const result = await cli('--home', home, 'cluster', ...args);
    assert.equal(result.code, 4, result.stderr);
    assert.equal(result.stderr, `hangar: ${path} exists: it may be a running cluster's ${path.endsWith('.conf') ? 'configuration' : 'store'}; choose another --out or remove it\n`);
    assert.equal(await readFile(join(dir, 'nats.conf'), 'utf8').catch(() => null), dir.endsWith('live') ? LIVE : null);
    assert.deepEqual(await readdir(join(home, 'state')).catch(() => []), [], 'nothing kept in the home');
  }

  test('init refuses an --out that exists', async () => {
    const dir = join(root, 'init-live');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'nats.conf'), LIVE);
    await refused(dir, ['init', '--url', URL, '--out', join(dir, 'nats.conf'), '--name', 'fresh'], join(dir, 'nats.conf'));
  });

  test('init refuses to point a new cluster at a store or accounts folder beside --out', async () => {
    for (const folder of ['nats-store', 'nats-accounts']) {
      const dir = join(root, `init-${folder}`);
      await mkdir(join(dir, folder), { recursive: true });
      await refused(dir, ['init', '--url', URL, '--out', join(dir, 'nats.conf'), '--name', 'fresh'], join(dir, folder));
    }
  });

  test('nats-config refuses an --out that exists', async () => {
    const dir = join(root, 'nats-config-live');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'nats.conf'), LIVE);
    const key = JSON.parse((await cli('--home', join(root, 'n1'), 'cluster', 'key', '--json')).stdout) as { key: string };
    await refused(dir, ['nats-config', '--node', `n1=${key.key}`, '--url', URL, '--out', join(dir, 'nats.conf')], join(dir, 'nats.conf'));
  });
});
