// What the real CLI says of a key typed wrong: a Hangar key (hk1_…) with a character mistyped or cut off is said to
// fail its checksum, not to be no Hangar key at all; something else is said to be no Hangar key. Nothing is written.
import assert from 'node:assert/strict';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { tempDir } from '../core/testing/fixtures.ts';
import { cli, cliRunsAsProcesses } from '../agent/test-agent.ts';

cliRunsAsProcesses();

describe('a key typed wrong', () => {
  let root: string;
  let key: string;

  before(async () => {
    root = await tempDir('key-words');
    const made = await cli('--home', join(root, 'viewer'), 'cluster', 'key', '--json');
    assert.equal(made.code, 0, made.stderr);
    key = (JSON.parse(made.stdout) as { key: string }).key;
  });

  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const mistyped = () => `${key.slice(0, 20)}${key[20] === 'A' ? 'B' : 'A'}${key.slice(21)}`;

  test('cluster trust says a mistyped or cut hk1_ key fails its checksum, and names what is no key at all', async () => {
    const home = join(root, 'node');
    for (const typed of [mistyped(), key.slice(0, -3)]) {
      const refused = await cli('--home', home, 'cluster', 'trust', typed);
      assert.equal(refused.code, 6, refused.stderr);
      assert.equal(refused.stderr, `hangar: "${typed}" fails its checksum: a character of it was mistyped or cut off (copy it whole, as hangar cluster key prints it)\n`);
    }
    const other = await cli('--home', home, 'cluster', 'trust', 'ssh-ed25519');
    assert.equal(other.stderr, 'hangar: "ssh-ed25519" is not a Hangar key (hangar cluster key prints one, starting with hk1_)\n');
    assert.deepEqual(await readdir(join(home, 'state')).catch(() => []), [], 'no trust list written');
  });

  test('nats-config says which machine\'s key fails its checksum', async () => {
    const typed = mistyped();
    const refused = await cli('cluster', 'nats-config', '--node', `gpu1=${typed}`, '--url', 'nats://127.0.0.1:4222', '--out', join(root, 'nats.conf'));
    assert.equal(refused.code, 2, refused.stderr);
    assert.equal(refused.stderr, `hangar: --node gpu1: "${typed}" fails its checksum: a character of it was mistyped or cut off (copy it whole, as hangar cluster key prints it)\n`);
    const viewer = await cli('cluster', 'nats-config', '--node', `gpu1=${key}`, '--viewer', `desk=${typed}`, '--url', 'nats://127.0.0.1:4222', '--out', join(root, 'nats.conf'));
    assert.equal(viewer.stderr, `hangar: --viewer desk: "${typed}" fails its checksum: a character of it was mistyped or cut off (copy it whole, as hangar cluster key prints it)\n`);
    assert.deepEqual(await readdir(root).then((names) => names.filter((n) => n.startsWith('nats'))), [], 'no configuration written');
  });
});
