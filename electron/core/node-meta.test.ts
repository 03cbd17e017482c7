// Meta backends through the node, as LocalAI lays them out: the meta directory, "installed as", the variant picker,
// alias groups, and delete.
import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { echoSource, runJob, startTestNode, writeGallery, type TestNode } from './testing/fixtures.ts';

const local = 'local';

describe('LocalNode with a meta backend', () => {
  let t: TestNode;

  before(async () => {
    t = await startTestNode({ capability: 'default' });
    const src = await echoSource(t.root, '1.0.0');
    await writeGallery(t.gallery, [
      { name: 'llama', capabilities: { default: 'cpu-echo', nvidia: 'cuda12-echo', intel: 'intel-echo' } },
      { name: 'cpu-echo', uri: src, version: '1.0.0', alias: 'llama' },
      { name: 'cuda12-echo', uri: src, version: '1.0.0', alias: 'llama' },
    ]);
  });
  after(() => t.close());

  const llama = async () => (await t.node.gallery({ node: local })).find((e) => e.name === 'llama')!;

  test('the gallery lists every build, marks the one for this machine with the reason, and incompatible ones', async () => {
    const entry = await llama();
    assert.equal(entry.compatible, true);
    assert.deepEqual(
      { resolves: entry.meta?.resolves, capability: entry.meta?.capability, picked: entry.meta?.picked, installedAs: entry.meta?.installedAs },
      { resolves: 'cpu-echo', capability: 'default', picked: false, installedAs: null },
    );
    assert.match(entry.meta!.reason, /^default: /);
    assert.deepEqual(entry.meta!.variants, [
      { capability: 'default', backend: 'cpu-echo', compatible: true },
      { capability: 'nvidia', backend: 'cuda12-echo', compatible: false },
      { capability: 'intel', backend: 'intel-echo', compatible: false },
    ]);
    const cuda = (await t.node.gallery({ node: local })).find((e) => e.name === 'cuda12-echo');
    assert.equal(cuda?.compatible, false);
  });

  test('a pick is checked, remembered under the node state, and can be undone', async () => {
    await assert.rejects(t.node.chooseVariant({ node: local, name: 'llama', capability: 'nvidia' }), /does not run on this machine \(default\)/);
    await assert.rejects(t.node.chooseVariant({ node: local, name: 'llama', capability: 'amd' }), /has no "amd" build/);
    await assert.rejects(t.node.chooseVariant({ node: local, name: 'cpu-echo', capability: 'default' }), /not a meta backend/);
    const picked = await t.node.chooseVariant({ node: local, name: 'llama', capability: 'default' });
    assert.equal(picked.meta?.picked, true);
    assert.match(picked.meta!.reason, /picked on this node/);
    const state = JSON.parse(await readFile(join(t.node.stateDir, 'variants.json'), 'utf8'));
    assert.deepEqual(state, { llama: 'default' });
    assert.equal((await t.node.chooseVariant({ node: local, name: 'llama', capability: null })).meta?.picked, false);
    assert.ok(t.events.some((e) => e.type === 'gallery-changed'));
  });

  test('installing the meta writes LocalAI\'s meta directory (no alias, the build\'s version); the entry says installed as', async () => {
    await runJob(t.node, t.node.install({ node: local, name: 'llama' }));
    const meta = JSON.parse(await readFile(join(t.node.backendsDir, 'llama', 'metadata.json'), 'utf8'));
    assert.deepEqual(Object.keys(meta).sort(), ['gallery_url', 'installed_at', 'meta_backend_for', 'name', 'version']);
    assert.deepEqual([meta.name, meta.meta_backend_for, meta.version], ['llama', 'cpu-echo', '1.0.0']);
    const entry = await llama();
    assert.equal(entry.installed, true);
    assert.equal(entry.meta?.installedAs, 'cpu-echo');
    assert.match((await t.node.load({ node: local, backend: 'llama', model: 'm1' })).message, /with echo 1\.0\.0/);
  });

  test('a build installed without its meta directory is still reachable by its alias', async () => {
    await t.node.stop({ node: local, model: 'm1' });
    await rm(join(t.node.backendsDir, 'llama'), { recursive: true });
    assert.equal((await llama()).meta?.installedAs, 'cpu-echo');
    assert.match((await t.node.load({ node: local, backend: 'llama', model: 'm2' })).message, /with echo 1\.0\.0/);
    await t.node.stop({ node: local, model: 'm2' });
  });

  test('installing the meta over its installed build writes only the meta directory, and says so', async () => {
    const job = await runJob(t.node, t.node.install({ node: local, name: 'llama' }));
    assert.deepEqual([job.phase, job.bytes], ['cpu-echo already installed; llama now points at it', 0]);
  });

  test('deleting the meta deletes its build too, as LocalAI does', async () => {
    assert.deepEqual((await t.node.backends({ node: local })).map((b) => b.name), ['cpu-echo', 'llama']);
    await runJob(t.node, t.node.delete({ node: local, name: 'llama' }));
    assert.deepEqual(await t.node.backends({ node: local }), []);
  });
});
