// A node's settings on a real node and home: kept across restarts, applied at once, fixed ones refused.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parseRequest } from '../../shared/schemas.ts';
import type { NodeEvent } from '../../shared/types.ts';
import { isAlive } from './supervisor/identity.ts';
import { LocalNode, type LocalNodeOptions } from './node.ts';
import { echoSource, runJob, tempDir, writeGallery } from './testing/fixtures.ts';

const local = 'local';

async function homeWithGalleries(): Promise<{ root: string; starter: string; other: string }> {
  const root = await tempDir('settings');
  const starter = join(root, 'starter.yaml');
  const other = join(root, 'other.yaml');
  await writeGallery(starter, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
  await writeGallery(other, [{ name: 'other-echo', uri: await echoSource(root, '2.0.0'), version: '2.0.0' }]);
  return { root, starter, other };
}

function nodeOn(root: string, starter: string, extra: Partial<LocalNodeOptions> = {}): LocalNode {
  return new LocalNode({ home: join(root, 'home'), starterGallery: starter, runtimeEnv: { HANGAR_NODE: process.execPath }, ...extra });
}

const names = async (node: LocalNode) => (await node.gallery({ node: local })).map((e) => `${e.gallery}@${e.name}`);

describe('node settings', () => {
  test('galleries, ports and auto-upgrade apply at once, reach every viewer, and survive a restart', async (t) => {
    const { root, starter, other } = await homeWithGalleries();
    const node = nodeOn(root, starter);
    t.after(() => node.close({ stopBackends: true }));
    await node.start();
    assert.deepEqual(await names(node), ['starter@echo'], 'the starter gallery by default');
    const events: NodeEvent[] = [];
    node.on('event', (e) => events.push(e));

    await node.updateSettings({
      node: local,
      settings: {
        galleries: [
          { name: 'mine', location: other, enabled: true },
          { name: 'starter', location: 'starter', enabled: false },
        ],
        portRange: [29600, 29609],
      },
    });
    assert.deepEqual(await names(node), ['mine@other-echo']);
    assert.ok(events.some((e) => e.type === 'settings'), 'viewers learn of the change');
    assert.ok(events.some((e) => e.type === 'gallery-changed'));
    await runJob(node, node.install({ node: local, name: 'other-echo' }));
    const loaded = await node.load({ node: local, backend: 'other-echo', model: 'm1' });
    assert.ok(loaded.port >= 29600 && loaded.port <= 29609, `port ${loaded.port} is in the new range`);
    await node.close({ stopBackends: true });

    const again = nodeOn(root, starter);
    t.after(() => again.close({ stopBackends: true }));
    await again.start();
    const { settings, fixed } = await again.settings({ node: local });
    assert.deepEqual(settings.portRange, [29600, 29609]);
    assert.deepEqual(fixed, []);
    assert.deepEqual(await names(again), ['mine@other-echo']);
  });

  test('what the host fixed for its run is refused; a bad settings file is reported, not half-used', async (t) => {
    const { root, starter, other } = await homeWithGalleries();
    const fixedNode = nodeOn(root, starter, { galleries: [{ name: 'cli', location: other }], autoUpgrade: false });
    t.after(() => fixedNode.close({ stopBackends: true }));
    await fixedNode.start();
    const view = await fixedNode.settings({ node: local });
    assert.deepEqual(view.fixed.sort(), ['autoUpgrade', 'galleries']);
    assert.deepEqual(view.settings.galleries, [{ name: 'cli', location: other, enabled: true }]);
    await assert.rejects(fixedNode.updateSettings({ node: local, settings: { galleries: [] } }), /galleries is fixed for this run/);
    await assert.rejects(fixedNode.updateSettings({ node: local, settings: { autoUpgrade: true } }), /^HangarError: auto-upgrade is fixed for this run by how the host was started$/);
    await fixedNode.updateSettings({ node: local, settings: { keepBackendsRunning: true } });
    await fixedNode.close({ stopBackends: true });

    await writeFile(join(root, 'home', 'state', 'settings.json'), '{"portRange": [1, 2], "autoUpgrade": "yes"}');
    const node = nodeOn(root, starter);
    t.after(() => node.close({ stopBackends: true }));
    const recovered = await node.start();
    assert.ok(recovered.some((line) => /settings\.json was not used: /.test(line)), recovered.join('\n'));
    assert.deepEqual((await node.settings({ node: local })).settings.portRange, [30100, 30999]);
  });

  test('a gallery added is read first: one that cannot be is refused in one line and nothing changes, unless forced', async (t) => {
    const { root, starter, other } = await homeWithGalleries();
    const node = nodeOn(root, starter);
    t.after(() => node.close({ stopBackends: true }));
    await node.start();
    const kept = (await node.settings({ node: local })).settings.galleries;
    const missing = join(root, 'nothing.yaml');
    const broken = join(root, 'broken.yaml');
    await writeFile(broken, '- name: a\n  tags: [x, y\n- name: b\n');
    const gone = { name: 'gone', location: missing, enabled: true };
    await assert.rejects(node.updateSettings({ node: local, settings: { galleries: [...kept, gone] } }), {
      name: 'HangarError',
      code: 'bad-input',
      message: `${missing} does not exist: the gallery was not added`,
    });
    await assert.rejects(node.updateSettings({ node: local, settings: { galleries: [...kept, { name: 'bad', location: broken, enabled: true }] } }), (error: Error) =>
      new RegExp(`^gallery "${broken}": invalid YAML: .*: the gallery was not added$`).test(error.message),
    );
    assert.deepEqual((await node.settings({ node: local })).settings.galleries, kept, 'nothing was added');

    await node.updateSettings({ node: local, settings: { galleries: [...kept, gone] }, force: true });
    const reordered = [{ ...gone, enabled: false }, ...kept];
    await node.updateSettings({ node: local, settings: { galleries: reordered } });
    assert.deepEqual((await node.settings({ node: local })).settings.galleries, reordered, 'a gallery kept is not read again when it is moved or turned off');
    await node.updateSettings({ node: local, settings: { galleries: [...reordered, { name: 'mine', location: other, enabled: true }] } });
    assert.deepEqual(await names(node), ['starter@echo', 'mine@other-echo']);

    assert.throws(() => parseRequest('updateSettings', { node: local, settings: {}, force: 'yes' }), /expected boolean/);
    assert.deepEqual(parseRequest('updateSettings', { node: local, settings: {}, force: true }), { node: local, settings: {}, force: true });
  });

  test('keep-running leaves the backends up when the host closes, and the next host adopts them', async (t) => {
    const { root, starter } = await homeWithGalleries();
    const node = nodeOn(root, starter);
    await node.start();
    await runJob(node, node.install({ node: local, name: 'echo' }));
    const { pid } = await node.load({ node: local, backend: 'echo', model: 'kept' });
    await node.updateSettings({ node: local, settings: { keepBackendsRunning: true } });
    await node.close();
    assert.ok(isAlive(pid), 'the backend outlived its host');

    const next = nodeOn(root, starter);
    t.after(() => next.close({ stopBackends: true }));
    await next.start();
    assert.equal((await next.processes({ node: local })).find((p) => p.model === 'kept')?.pid, pid);
  });
});
