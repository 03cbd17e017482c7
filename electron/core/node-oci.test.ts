// Backends from a real OCI registry (Debian's docker-registry), through the node: digest-based upgrades,
// respawn after upgrade, mirrors, and Upgrade all.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { hostPlatform } from './install/oci/platform.ts';
import { buildLayer, directoryEntries, foreignPlatform, pushImage } from './install/oci/testing/image.ts';
import { startRegistry, type TestRegistry } from './install/oci/testing/registry.ts';
import { echoSource, runJob, startTestNode, writeGallery, type TestNode } from './testing/fixtures.ts';

const local = 'local';
const host = hostPlatform();

describe('LocalNode with an OCI registry', () => {
  let registry: TestRegistry;
  let t: TestNode;
  let ref: string;

  /** Pushes echo `version` as a two-platform index (this machine's and a foreign one) to the same tag; its index digest. */
  async function pushEcho(version: string): Promise<string> {
    const layer = await buildLayer(await directoryEntries(await echoSource(t.root, version)));
    const pushed = await pushImage(registry.url, 'backends/echo', 'latest', { layers: [layer], platforms: [host, foreignPlatform(host)] });
    return pushed.index!;
  }

  before(async () => {
    registry = await startRegistry();
    t = await startTestNode();
    ref = `${registry.host}/backends/echo:latest`;
  });
  after(async () => {
    await t.close();
    await registry.stop();
  });

  test('installs from the registry and records the tag\'s index digest, as LocalAI does', async () => {
    const digest = await pushEcho('1.0.0');
    await writeGallery(t.gallery, [{ name: 'echo', uri: ref }]);
    await runJob(t.node, t.node.install({ node: local, name: 'echo' }));
    const metadata = JSON.parse(await readFile(join(t.node.backendsDir, 'echo', 'metadata.json'), 'utf8'));
    assert.equal(metadata.digest, digest);
    assert.equal(metadata.uri, ref);
    const loaded = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    assert.match(loaded.message, /with echo 1\.0\.0/);
  });

  test('an unchanged two-platform image is never upgradable; a LocalAI-written metadata.json with the index digest neither', async () => {
    const file = join(t.node.backendsDir, 'echo', 'metadata.json');
    const ours = await readFile(file, 'utf8');
    const upgradable = async () => (await t.node.backends({ node: local }))[0]?.upgradable;
    assert.equal(await upgradable(), false);
    await t.node.gallery({ node: local, refresh: true });
    assert.equal(await upgradable(), false, 'checked again after a refresh');

    const { digest } = JSON.parse(ours) as { digest: string };
    const localai = { name: 'echo', gallery_url: 'https://example.invalid/index.yaml', installed_at: '2026-01-02T03:04:05Z', uri: ref };
    try {
      await writeFile(file, JSON.stringify({ ...localai, digest }, null, 2));
      assert.equal(await upgradable(), false, 'LocalAI records the same digest');
      await writeFile(file, JSON.stringify(localai, null, 2));
      assert.equal(await upgradable(), true, 'an OCI backend with no stored digest cannot be confirmed current (LocalAI offers it too)');
    } finally {
      await writeFile(file, ours);
    }
  });

  test('a new image on the same tag shows as upgradable; upgrade respawns from the new tree', async () => {
    const before = (await t.node.processes({ node: local }))[0]!;
    assert.equal((await t.node.backends({ node: local }))[0]?.upgradable, false);
    const digest = await pushEcho('2.0.0');
    await t.node.gallery({ node: local, refresh: true });
    assert.equal((await t.node.backends({ node: local }))[0]?.upgradable, true);

    const results = await t.node.upgradeAll({ node: local });
    assert.deepEqual(results.map((r) => [r.backend, r.ok]), [['echo', true]]);
    const [after] = await t.node.processes({ node: local });
    assert.notEqual(after?.pid, before.pid);
    assert.equal(after?.cwd, 'ok');
    const metadata = JSON.parse(await readFile(join(t.node.backendsDir, 'echo', 'metadata.json'), 'utf8'));
    assert.equal(metadata.digest, digest);
    assert.match((await t.node.load({ node: local, backend: 'echo', model: 'm1' })).message, /with echo 2\.0\.0/);
    assert.equal((await t.node.backends({ node: local }))[0]?.upgradable, false);
    assert.deepEqual(await t.node.upgradeAll({ node: local }), []);
  });

  test('falls back to a mirror when the primary registry is down, and records the primary uri as LocalAI does', async () => {
    const dead = `127.0.0.1:1/backends/echo:latest`;
    await writeGallery(t.gallery, [{ name: 'echo', uri: dead, mirrors: [ref] }]);
    await runJob(t.node, t.node.install({ node: local, name: 'echo', force: true }));
    const metadata = JSON.parse(await readFile(join(t.node.backendsDir, 'echo', 'metadata.json'), 'utf8'));
    assert.equal(metadata.uri, dead);
  });

  test('an image missing under its latest- tag is taken from master-, as LocalAI falls back', async () => {
    const layer = await buildLayer(await directoryEntries(await echoSource(t.root, '3.0.0')));
    await pushImage(registry.url, 'backends/echo', 'master-echo', { layers: [layer], platforms: [host] });
    const latest = `${registry.host}/backends/echo:latest-echo`;
    await writeGallery(t.gallery, [{ name: 'echo', uri: latest }]);
    await runJob(t.node, t.node.install({ node: local, name: 'echo', force: true }));
    const metadata = JSON.parse(await readFile(join(t.node.backendsDir, 'echo', 'metadata.json'), 'utf8'));
    assert.equal(metadata.uri, latest);
    assert.match((await t.node.load({ node: local, backend: 'echo', model: 'm3' })).message, /with echo 3\.0\.0/);
  });

  test('an oci:// uri: Hangar records the digest and offers a digest upgrade, and the row says LocalAI does neither', async () => {
    const digest = await pushEcho('4.0.0');
    const uri = `oci://${ref}`;
    await writeGallery(t.gallery, [{ name: 'echo', uri }]);
    await runJob(t.node, t.node.install({ node: local, name: 'echo', force: true }));
    const metadata = JSON.parse(await readFile(join(t.node.backendsDir, 'echo', 'metadata.json'), 'utf8'));
    assert.deepEqual([metadata.uri, metadata.digest], [uri, digest]);
    const note = "LocalAI records no digest for an oci:// uri and never offers its upgrade; Hangar compares the image's digest";
    const echo = async () => (await t.node.backends({ node: local })).find((b) => b.name === 'echo')!;
    assert.deepEqual([(await echo()).upgradable, (await echo()).localai], [false, [note]]);
    await pushEcho('5.0.0');
    await t.node.gallery({ node: local, refresh: true });
    assert.deepEqual([(await echo()).upgradable, (await echo()).localai], [true, [note]]);
    await writeGallery(t.gallery, [{ name: 'echo', uri: ref }]);
    assert.deepEqual((await echo()).localai, [], 'a uri LocalAI looks up says nothing');
  });
});
