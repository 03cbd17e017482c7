// LocalNode under faults: a new build that cannot start, a source that never ends, qualifiers naming no gallery.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { isAlive } from './supervisor/identity.ts';
import { runJob, startTestNode, writeGallery, type TestNode } from './testing/fixtures.ts';

const local = 'local';

describe('a swap is health-gated', () => {
  let t: TestNode;
  before(async () => {
    t = await startTestNode();
    await runJob(t.node, t.node.install({ node: local, name: 'echo' }));
    await t.publishEcho('1.1.0');
    await runJob(t.node, t.node.upgrade({ node: local, name: 'echo' }));
  });
  after(() => t.close());

  test('an upgrade whose processes cannot start swaps back, respawns the old build and keeps the rollback target', async () => {
    const loaded = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    const broken = await t.publishEcho('2.0.0');
    await writeFile(join(broken, 'run.sh'), '#!/bin/sh\necho "cannot start: missing libfoo.so" >&2\nexit 3\n', { mode: 0o755 });

    for (let attempt = 0; attempt < 2; attempt++) {
      const job = await t.node.waitJob({ node: local, id: (await t.node.upgrade({ node: local, name: 'echo' })).id });
      assert.equal(job.state, 'failed');
      assert.match(job.error ?? '', /^upgrade echo to 2\.0\.0 failed: .*missing libfoo\.so.*; rolled back to 1\.1\.0$/);
      const [echo] = await t.node.backends({ node: local });
      assert.equal(echo?.version, '1.1.0');
      assert.equal(echo?.previous?.version, '1.0.0', 'the failed build never takes the rollback slot');
      const version = await readFile(join(t.node.backendsDir, 'echo', 'VERSION'), 'utf8');
      assert.equal(version.trim(), '1.1.0');
      const [m1] = await t.node.processes({ node: local });
      assert.equal(m1?.model, 'm1');
      assert.equal(m1?.state, 'ready');
      assert.equal(m1?.cwd, 'ok');
    }
    assert.equal(isAlive(loaded.pid), false);
    const again = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    assert.match(again.message, /with echo 1\.1\.0/);
  });
});

describe('with no process to respawn, a swap smoke-starts the new build', () => {
  let t: TestNode;
  before(async () => {
    t = await startTestNode();
    await runJob(t.node, t.node.install({ node: local, name: 'echo' }));
  });
  after(() => t.close());

  /** Publishes echo 2.0.0 whose run.sh exits 7 at once. */
  async function publishBroken(): Promise<void> {
    const broken = await t.publishEcho('2.0.0');
    await writeFile(join(broken, 'run.sh'), '#!/bin/sh\necho "cannot start: missing libfoo.so" >&2\nexit 7\n', { mode: 0o755 });
  }

  test('an upgrade to a build that exits before it answers Health fails and rolls back, leaving nothing running', async () => {
    await publishBroken();
    const job = await t.node.waitJob({ node: local, id: (await t.node.upgrade({ node: local, name: 'echo' })).id });
    assert.equal(job.state, 'failed');
    assert.equal(job.error, 'upgrade echo to 2.0.0 failed: the new build exited with code 7 before it answered Health: cannot start: missing libfoo.so; rolled back to 1.0.0');
    const [echo] = await t.node.backends({ node: local });
    assert.equal(echo?.version, '1.0.0');
    assert.equal(echo?.previous, null, 'the failed build never takes the rollback slot');
    assert.deepEqual(await t.node.processes({ node: local }), []);
    assert.deepEqual(await t.node.scan({ node: local }), [], 'the smoke start left no process behind');
  });

  test('told not to (per job, or by the setting), the same upgrade is done, and only the next load finds the build broken', async () => {
    await publishBroken();
    await runJob(t.node, t.node.upgrade({ node: local, name: 'echo', smokeStart: false }));
    await assert.rejects(t.node.load({ node: local, backend: 'echo', model: 'm1' }), /exited while starting for model m1 \(exit code 7\)/);
    await runJob(t.node, t.node.rollback({ node: local, name: 'echo' }));

    await t.node.updateSettings({ node: local, settings: { smokeStart: false } });
    try {
      await runJob(t.node, t.node.upgrade({ node: local, name: 'echo' }));
      assert.equal((await t.node.backends({ node: local }))[0]?.version, '2.0.0');
      await runJob(t.node, t.node.rollback({ node: local, name: 'echo', smokeStart: true }));
      assert.equal((await t.node.backends({ node: local }))[0]?.version, '1.0.0', 'a rollback to a build that starts passes its smoke start');
    } finally {
      await t.node.updateSettings({ node: local, settings: { smokeStart: true } });
    }
    assert.deepEqual(await t.node.scan({ node: local }), []);
  });
});

describe('the backend lock is not held while fetching', () => {
  let t: TestNode;
  let server: Server;
  before(async () => {
    t = await startTestNode();
    await runJob(t.node, t.node.install({ node: local, name: 'echo' }));
    // A source that announces a large body and drips it forever.
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-length': String(1 << 30) });
      const drip = setInterval(() => res.write(Buffer.alloc(1)), 200);
      res.on('close', () => clearInterval(drip));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
  });
  after(async () => {
    server.closeAllConnections();
    server.close();
    await t.close();
  });

  test('load, respawn and stop of a backend answer while its reinstall streams an endless body', async () => {
    const { port } = server.address() as AddressInfo;
    await writeGallery(t.gallery, [{ name: 'echo', uri: `http://127.0.0.1:${port}/echo.tar.gz`, version: '5.0.0' }]);
    const job = await t.node.install({ node: local, name: 'echo', force: true });
    const loaded = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    const respawned = await t.node.respawn({ node: local, model: 'm1' });
    assert.notEqual(respawned.pid, loaded.pid);
    await t.node.stop({ node: local, model: 'm1' });
    assert.equal((await t.node.jobs({ node: local })).find((j) => j.id === job.id)?.state, 'running');
    const cancelled = await t.node.cancelJob({ node: local, id: job.id });
    assert.equal((await t.node.waitJob({ node: local, id: cancelled.id })).state, 'cancelled');
    const [echo] = await t.node.backends({ node: local });
    assert.equal(echo?.version, '1.0.0', 'the live backend is untouched');
  });
});

describe('gallery qualifiers', () => {
  let t: TestNode;
  before(async () => {
    t = await startTestNode();
    await runJob(t.node, t.node.install({ node: local, name: 'echo' }));
  });
  after(() => t.close());

  test('an unknown gallery qualifier is an error on every method that takes a name, and touches nothing', async () => {
    const unknown = /no gallery named "nogallery"/;
    await assert.rejects(t.node.delete({ node: local, name: 'nogallery@echo' }), unknown);
    await assert.rejects(t.node.rollback({ node: local, name: 'nogallery@echo' }), unknown);
    await assert.rejects(t.node.load({ node: local, backend: 'nogallery@echo', model: 'm1' }), unknown);
    await assert.rejects(t.node.respawnBackend({ node: local, name: 'nogallery@echo' }), unknown);
    // Refused to the caller before any job starts: a name no gallery has is no failed job for every viewer to see.
    await assert.rejects(t.node.install({ node: local, name: 'nogallery@echo', force: true }), unknown);
    await assert.rejects(t.node.upgrade({ node: local, name: 'nogallery@echo' }), unknown);
    assert.deepEqual((await t.node.jobs({ node: local })).filter((j) => j.backend.includes('nogallery')), []);
    assert.equal((await t.node.backends({ node: local }))[0]?.name, 'echo');
    const loaded = await t.node.load({ node: local, backend: 'test@echo', model: 'm1' });
    assert.ok(loaded.pid > 0, 'a qualifier naming a configured gallery works');
  });
});
