// The desktop's own single-node path, end to end: LocalNode with real galleries, real installs, real processes.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { NodeEvent } from '../../shared/types.ts';
import { BackendClient, type BackendCallError } from './supervisor/grpc-client.ts';
import { isAlive } from './supervisor/identity.ts';
import { runJob, startTestNode, writeGallery, type TestNode } from './testing/fixtures.ts';
import { until } from './testing/until.ts';

const local = 'local';

/** Waits for `seen` to hold, on the node's own events: 2 s is eight times the figure the bench measures. */


describe('LocalNode', () => {
  let t: TestNode;
  before(async () => {
    t = await startTestNode();
  });
  after(async () => {
    await t.close();
  });

  test('installs echo from the gallery and lists it with LocalAI metadata', async () => {
    const galleryEvents: string[] = [];
    const onEvent = (event: NodeEvent) => {
      if (event.type === 'gallery-entries') galleryEvents.push(...event.entries.map((e) => `${e.name}:${e.installed}`));
    };
    t.node.on('event', onEvent);
    await runJob(t.node, t.node.install({ node: local, name: 'echo' }));
    t.node.off('event', onEvent);
    assert.deepEqual(galleryEvents, ['echo:true'], 'viewers learn the entry is installed without fetching the gallery');
    const [echo] = await t.node.backends({ node: local });
    assert.equal(echo?.name, 'echo');
    assert.equal(echo?.version, '1.0.0');
    assert.equal(echo?.upgradable, false);
    const metadata = JSON.parse(await readFile(join(echo!.dir, 'metadata.json'), 'utf8'));
    assert.equal(metadata.name, 'echo');
    assert.match(metadata.installed_at, /^\d{4}-\d\d-\d\dT/);
    const gallery = await t.node.gallery({ node: local });
    assert.deepEqual(gallery.map((e) => [e.name, e.installed]), [['echo', true]]);
  });

  test('installing again without force does nothing, as in LocalAI, and says so', async () => {
    const before = await stat(join(t.node.backendsDir, 'echo'), { bigint: true });
    const job = await t.node.waitJob({ node: local, id: (await t.node.install({ node: local, name: 'echo' })).id });
    assert.equal(job.state, 'done');
    assert.equal(job.phase, 'already installed');
    assert.equal(job.bytes, 0, 'nothing fetched');
    const afterStat = await stat(join(t.node.backendsDir, 'echo'), { bigint: true });
    assert.equal(afterStat.ino, before.ino);
  });

  test('scenario 1: two forced reinstalls, the first rewriting the alias, never reuse the process', async () => {
    const first = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    assert.match(first.message, /loaded m1 with echo 1\.0\.0/);

    await t.publishEcho('1.0.1', { alias: 'echo-renamed' });
    await runJob(t.node, t.node.install({ node: local, name: 'echo', force: true }));
    const afterFirst = t.node.processes({ node: local });
    const p1 = (await afterFirst).find((p) => p.model === 'm1');
    assert.ok(p1, 'the process that ran before the reinstall is respawned');
    assert.notEqual(p1.pid, first.pid);
    assert.equal(p1.cwd, 'ok');
    assert.equal(isAlive(first.pid), false);
    // The respawned process has the model loaded again, by the backend's own word.
    assert.deepEqual([p1.state, p1.loaded, p1.port], ['ready', true, first.port]);
    const client = new BackendClient(`127.0.0.1:${p1.port}`);
    assert.equal((await client.status(2000)).state, 'READY');
    client.close();

    await t.publishEcho('1.0.2');
    await runJob(t.node, t.node.install({ node: local, name: 'echo', force: true }));
    const loaded = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    assert.notEqual(loaded.pid, first.pid);
    assert.notEqual(loaded.pid, p1.pid);
    assert.match(loaded.message, /with echo 1\.0\.2/);
    assert.equal(isAlive(p1.pid), false);
  });

  test('upgrade shows as upgradable, respawns from the new directory, and rollback swaps back', async () => {
    await t.publishEcho('2.0.0');
    const [listed] = await t.node.backends({ node: local });
    assert.equal(listed?.upgradable, true);
    assert.equal(listed?.availableVersion, '2.0.0');

    const before = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    await runJob(t.node, t.node.upgrade({ node: local, name: 'echo' }));
    const upgraded = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    assert.notEqual(upgraded.pid, before.pid);
    assert.equal(upgraded.reused, true, 'the respawned process is reused: it runs from the new directory');
    assert.match(upgraded.message, /with echo 2\.0\.0/);

    await runJob(t.node, t.node.rollback({ node: local, name: 'echo' }));
    const rolledBack = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    assert.notEqual(rolledBack.pid, upgraded.pid);
    assert.match(rolledBack.message, /with echo 1\.0\.2/);
    const [echo] = await t.node.backends({ node: local });
    assert.equal(echo?.version, '1.0.2');
    assert.equal(echo?.previous?.version, '2.0.0');
  });

  test('upgrading what is up to date is a no-op that says so: no fetch, no swap, no restart, rollback target kept', async () => {
    await t.publishEcho('1.0.2');
    const before = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    const dir = await stat(join(t.node.backendsDir, 'echo'), { bigint: true });
    const job = await runJob(t.node, t.node.upgrade({ node: local, name: 'echo' }));
    assert.equal(job.phase, 'up to date');
    assert.equal(job.bytes, 0);
    assert.equal((await stat(join(t.node.backendsDir, 'echo'), { bigint: true })).ino, dir.ino);
    const after = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    assert.equal(after.pid, before.pid);
    assert.equal((await t.node.backends({ node: local }))[0]?.previous?.version, '2.0.0');
  });

  test('scenario 3: with the gallery failing, a swap still stops the process by directory identity', async () => {
    const before = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    await writeFile(t.gallery, 'this: is: not: [valid yaml');
    await runJob(t.node, t.node.rollback({ node: local, name: 'echo' }));
    assert.equal(isAlive(before.pid), false);
    const after = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    assert.match(after.message, /with echo 2\.0\.0/);
    await t.publishEcho('2.0.0');
  });

  test('a wrong sha256 fails the install with a clear error and leaves the live backend working', async () => {
    const live = await stat(join(t.node.backendsDir, 'echo'), { bigint: true });
    const src = await t.publishEcho('3.0.0');
    const tarball = join(t.root, 'echo-3.0.0.tar.gz');
    execFileSync('tar', ['-czf', tarball, '-C', src, '.']);
    await writeGallery(t.gallery, [{ name: 'echo', uri: tarball, version: '3.0.0', sha256: 'a'.repeat(64) }]);
    const job = await t.node.waitJob({ node: local, id: (await t.node.upgrade({ node: local, name: 'echo' })).id });
    assert.equal(job.state, 'failed');
    assert.match(job.error ?? '', /echo/);
    assert.match(job.error ?? '', /sha256/i);
    assert.equal((await stat(join(t.node.backendsDir, 'echo'), { bigint: true })).ino, live.ino);
    const loaded = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    assert.match(loaded.message, /with echo 2\.0\.0/);
    await t.publishEcho('2.0.0');
  });

  test('scenario 9: 50 concurrent load/respawn/install calls on one backend end consistent, with no orphan', async () => {
    await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    const calls = Array.from({ length: 50 }, (_, i) => {
      if (i % 10 === 0) return t.node.install({ node: local, name: 'echo', force: true }).then((j) => t.node.waitJob({ node: local, id: j.id }));
      if (i % 2 === 0) return t.node.respawn({ node: local, model: 'm1' });
      return t.node.load({ node: local, backend: 'echo', model: 'm1' });
    });
    const results = await Promise.allSettled(calls);
    assert.deepEqual(results.filter((r) => r.status === 'rejected'), []);
    const processes = (await t.node.processes({ node: local })).filter((p) => p.backend === 'echo');
    assert.equal(processes.length, 1);
    assert.equal(processes[0]?.cwd, 'ok');
    const stray = (await t.node.scan({ node: local })).filter((s) => s.pid !== processes[0]?.pid);
    assert.deepEqual(stray, [], 'no process other than the supervised one runs from the backends directory');
  });

  test('an out-of-band swap is seen as stale and the next load respawns into the new tree', async () => {
    const before = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    const live = join(t.node.backendsDir, 'echo');
    const fresh = await t.publishEcho('9.9.9');
    await rename(live, `${live}.install-backup`);
    await rename(fresh, live);
    await rm(`${live}.install-backup`, { recursive: true });
    const stale = await waitFor(async () => (await t.node.processes({ node: local })).find((p) => p.model === 'm1' && p.cwd === 'stale'));
    assert.equal(stale.pid, before.pid);
    const after = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    assert.notEqual(after.pid, before.pid);
    assert.equal(after.reused, false);
    assert.match(after.message, /with echo 9\.9\.9/);
  });

  test('a reinstall after an out-of-band swap starts the stale process from the new tree too, and gates on it', async () => {
    const live = join(t.node.backendsDir, 'echo');
    const m1 = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    const fresh = await t.publishEcho('9.9.10');
    await rename(live, `${live}.old`);
    execFileSync('cp', ['-a', fresh, live]);
    await waitFor(async () => (await t.node.processes({ node: local })).find((p) => p.model === 'm1' && p.cwd === 'stale'));
    const m2 = await t.node.load({ node: local, backend: 'echo', model: 'm2' });
    try {
      const job = await runJob(t.node, t.node.install({ node: local, name: 'echo', force: true }));
      assert.equal(job.state, 'done', job.error ?? '');
      const after = await t.node.processes({ node: local });
      for (const [model, before] of [['m1', m1.pid], ['m2', m2.pid]] as const) {
        const now = after.find((p) => p.model === model);
        assert.deepEqual([now?.cwd, now?.state, now?.loaded], ['ok', 'ready', true], `${model} runs from the new tree`);
        assert.notEqual(now?.pid, before, `${model} was started again`);
        assert.equal(isAlive(before), false, `${model}'s old process is gone`);
      }
    } finally {
      await t.node.stop({ node: local, model: 'm2' });
      await rm(`${live}.old`, { recursive: true, force: true });
    }
  });

  test('a tree copied in or removed by hand reaches the viewers as a backend event and its removal', async () => {
    const heard: string[] = [];
    const onEvent = (event: NodeEvent) => {
      if (event.type === 'backend' && event.backend.name === 'copied') heard.push(`backend ${event.backend.version}`);
      if (event.type === 'backend-removed' && event.name === 'copied') heard.push('removed');
    };
    t.node.on('event', onEvent);
    try {
      const copied = join(t.node.backendsDir, 'copied');
      execFileSync('cp', ['-a', join(t.node.backendsDir, 'echo'), copied]);
      await until('the change told to the viewers', () => heard.find((h) => h.startsWith('backend ')), 2000);
      const listed = (await t.node.backends({ node: local })).find((b) => b.name === 'copied');
      assert.equal(heard[0], `backend ${listed?.version ?? null}`, 'the event says what a listing says');
      await rm(copied, { recursive: true });
      await until('the removal told to the viewers', () => (heard.at(-1) === 'removed' ? true : undefined), 2000);
    } finally {
      t.node.off('event', onEvent);
      await rm(join(t.node.backendsDir, 'copied'), { recursive: true, force: true });
    }
  });

  test('delete stops the processes and removes the backend', async () => {
    const before = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    await runJob(t.node, t.node.delete({ node: local, name: 'echo' }));
    assert.equal(isAlive(before.pid), false);
    assert.deepEqual(await t.node.backends({ node: local }), []);
    assert.deepEqual(await t.node.processes({ node: local }), []);
    assert.ok(t.events.some((e) => e.type === 'backend-removed' && e.name === 'echo'));
  });

  test('delete stops a process whose directory was replaced outside Hangar too', async () => {
    await runJob(t.node, t.node.install({ node: local, name: 'echo' }));
    const live = join(t.node.backendsDir, 'echo');
    const m1 = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
    await rename(live, `${live}.old`);
    execFileSync('cp', ['-a', `${live}.old`, live]);
    await waitFor(async () => (await t.node.processes({ node: local })).find((p) => p.model === 'm1' && p.cwd === 'stale'));
    try {
      await runJob(t.node, t.node.delete({ node: local, name: 'echo' }));
      assert.equal(isAlive(m1.pid), false);
      assert.deepEqual(await t.node.processes({ node: local }), []);
    } finally {
      await rm(`${live}.old`, { recursive: true, force: true });
    }
  });

  test('a request for another node is refused', async () => {
    await assert.rejects(t.node.backends({ node: 'elsewhere' }), /no node elsewhere/);
  });
});

async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('LocalNode with auto-upgrade on', () => {
  test('a newer version in the gallery is installed without a click', async () => {
    const t = await startTestNode({ autoUpgrade: true });
    try {
      await runJob(t.node, t.node.install({ node: local, name: 'echo' }));
      await t.publishEcho('1.5.0');
      const upgraded = await waitFor(async () => {
        const [echo] = await t.node.backends({ node: local });
        // Until the swap settles, the replaced tree is held aside and the rollback slot is not filled yet.
        return echo?.version === '1.5.0' && echo.previous ? echo : undefined;
      }, 10_000);
      assert.equal(upgraded.previous?.version, '1.0.0');
    } finally {
      await t.close();
    }
  });
});

describe('LocalNode with a backend auth token', () => {
  test('backends get LOCALAI_GRPC_AUTH_TOKEN, Hangar presents it, and a call without it is refused', async () => {
    const t = await startTestNode({ supervisor: { grpcToken: 'backend-secret' } });
    try {
      await runJob(t.node, t.node.install({ node: local, name: 'echo' }));
      const loaded = await t.node.load({ node: local, backend: 'echo', model: 'm1' });
      assert.match(loaded.message, /loaded m1/);
      const anonymous = new BackendClient(`127.0.0.1:${loaded.port}`);
      try {
        await assert.rejects(anonymous.health(5000), (error: BackendCallError) => error.details.includes('bearer token'));
      } finally {
        anonymous.close();
      }
    } finally {
      await t.close();
    }
  });
});
