// A node's settings on a real node and home: kept across restarts, applied at once, fixed ones refused.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
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
    await fixedNode.updateSettings({ node: local, settings: { keepBackendsRunning: true } });
    await fixedNode.close({ stopBackends: true });

    await writeFile(join(root, 'home', 'state', 'settings.json'), '{"portRange": [1, 2], "autoUpgrade": "yes"}');
    const node = nodeOn(root, starter);
    t.after(() => node.close({ stopBackends: true }));
    const recovered = await node.start();
    assert.ok(recovered.some((line) => /settings\.json was not used: /.test(line)), recovered.join('\n'));
    assert.deepEqual((await node.settings({ node: local })).settings.portRange, [30100, 30999]);
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
