// Hangar beside a running single-node LocalAI (the stand-in written from LocalAI's code) on the same backends
// directory, as a user runs them: a real agent linked with --localai-url, LocalAI's models on real echo backends.
// After Hangar's upgrade and after LocalAI's own, LocalAI's next request is served warm by the new build from a
// process whose cwd is the live tree; nothing else LocalAI runs is touched; a stale model shows as such, and respawn
// and unload go through LocalAI's API; a reload that fails rolls the upgrade back.
import assert from 'node:assert/strict';
import { rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { JobView, LocalAiServerView, ProcessView } from '../../../shared/types.ts';
import { connect } from '../../agent/connect.ts';
import { hangar, json, read, startAgent, until, type Agent } from '../../agent/test-agent.ts';
import { echoSource, tempDir, writeGallery } from '../../core/testing/fixtures.ts';
import { StandInServer } from '../testing/standin-server.ts';

describe('Hangar beside a running LocalAI server', () => {
  let root: string;
  let agent: Agent;
  let localai: StandInServer;
  let backendsDir: string;
  /** Hangar's gallery and LocalAI's own, each offering echo at some version. */
  let hangarGallery: string;
  let localaiGallery: string;

  const offer = async (gallery: string, version: string, uri?: string) => writeGallery(gallery, [{ name: 'echo', uri: uri ?? (await echoSource(root, version)), version }, { name: 'other', uri: await echoSource(root, 'other-1'), version: 'other-1' }]);
  const ok = async (...args: string[]) => {
    const result = await hangar(agent, ...args);
    assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
    return result;
  };
  const ps = () => json<Array<ProcessView & { runBy: string }>>(agent, 'ps');
  const row = async (model: string) => (await ps()).find((p) => p.model === model);
  const post = async (path: string, body: unknown) => {
    const response = await fetch(localai.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const complete = async (model: string) => {
    const answer = await post('/v1/completions', { model, prompt: 'hi' });
    return answer.status === 200 ? ((answer.body.choices as Array<{ text: string }>)[0]!.text) : `error ${answer.status}: ${JSON.stringify(answer.body)}`;
  };
  /** Whether LocalAI's process for `model` runs from the backend's live directory, by the cwd's identity. */
  const fromLiveTree = async (model: string, backend: string) => {
    const pid = localai.pids().get(model)!;
    const [cwd, live] = await Promise.all([stat(`/proc/${pid}/cwd`, { bigint: true }), stat(join(backendsDir, backend), { bigint: true })]);
    return cwd.dev === live.dev && cwd.ino === live.ino;
  };
  const jobOf = async (result: { stdout: string }) => JSON.parse(result.stdout) as JobView;
  /** Waits for LocalAI's own gallery job. */
  const localaiJob = async (path: string, body?: unknown) => {
    const started = await post(path, body ?? {});
    const id = started.body.id as string;
    return until(`LocalAI's job ${path}`, async () => {
      const status = (await (await fetch(`${localai.url}/backends/jobs/${id}`)).json()) as { processed: boolean; error?: string };
      return status.processed ? status : undefined;
    }, 20_000);
  };

  before(async () => {
    root = await tempDir('localai-server');
    const home = join(root, 'home');
    backendsDir = join(home, 'backends');
    hangarGallery = join(root, 'hangar-index.yaml');
    localaiGallery = join(root, 'localai-index.yaml');
    await offer(hangarGallery, '1.0.0');
    await offer(localaiGallery, '1.0.0');
    agent = await startAgent(home, hangarGallery, ['--ports', '24300-24319']);
    await ok('install', 'echo');
    await ok('install', 'other');
    // LocalAI starts on that directory: it registers the backends it finds there, and loads two models.
    localai = new StandInServer({ backendsDir, gallery: localaiGallery, models: { m1: 'echo', m2: 'other' }, healthAttempts: 200, healthIntervalMs: 20, indexCacheMs: 0, loadFailureCooldownMs: 2000 });
    await localai.start();
    for (const model of ['m1', 'm2']) assert.equal((await post('/backend/load', { model })).status, 200);
    const client = await connect({ node: agent.url, home });
    try {
      const view: LocalAiServerView = await client.updateLocalaiServer({ node: 'local', server: { url: localai.url } });
      assert.equal(view.url, localai.url);
    } finally {
      client.close();
    }
    await until("LocalAI's models listed", async () => ((await ps()).filter((p) => p.runBy === 'localai' && p.cwd === 'ok').length === 2 ? true : undefined), 10_000);
  });

  after(async () => {
    agent?.child.kill('SIGKILL');
    await localai?.stop();
    await rm(root, { recursive: true, force: true });
  });

  test("LocalAI's models are processes of this node: run by LocalAI, their pid and cwd, in ps and on the card", async () => {
    const m1 = (await row('m1'))!;
    assert.deepEqual([m1.runBy, m1.backend, m1.pid, m1.cwd, m1.dir], ['localai', 'echo', localai.pids().get('m1'), 'ok', join(backendsDir, 'echo')]);
    assert.match((await ok('ps')).stdout, /\nm1 +echo +LocalAI +\d+/);
    const card = (await read(agent, 'nodes'))[0]!;
    assert.equal(card.counts.processes, 2);
  });

  test("after `hangar upgrade echo`, LocalAI's next m1 request is served warm by 2.0.0 from the live tree; m2 is not touched", async () => {
    const m2Before = localai.pids().get('m2');
    await offer(hangarGallery, '2.0.0');
    await ok('gallery', '--refresh');
    const job = await jobOf(await ok('upgrade', 'echo', '--json'));
    assert.equal(job.state, 'done', job.error ?? '');
    assert.match(job.notice ?? '', /^LocalAI: m1 reloaded from 2\.0\.0 in \d+\.\d s$/);
    const spawned = localai.spawned;
    assert.equal(await complete('m1'), 'echo 2.0.0: hi');
    assert.equal(localai.spawned, spawned, 'served warm: the request spawned nothing');
    assert.ok(await fromLiveTree('m1', 'echo'));
    assert.equal(localai.pids().get('m2'), m2Before, 'm2 kept its process');
  });

  test("after LocalAI's own upgrade (its backends page), Hangar brings m1 back on the new tree within 10 s, warm", async () => {
    const before = localai.pids().get('m1');
    await offer(localaiGallery, '3.0.0');
    const started = Date.now();
    assert.equal((await localaiJob('/backends/upgrade/echo')).error, undefined);
    await until('m1 respawned by Hangar', async () => (localai.pids().get('m1') !== before && (await row('m1'))?.cwd === 'ok' ? true : undefined), 10_000);
    const spawned = localai.spawned;
    assert.equal(await complete('m1'), 'echo 3.0.0: hi');
    assert.equal(localai.spawned, spawned);
    assert.ok(await fromLiveTree('m1', 'echo'));
    assert.ok(Date.now() - started < 10_000);
  });

  test('with localai-respawn off, a stale LocalAI model shows as such with its reason; respawn and unload go through LocalAI', async () => {
    await ok('settings', 'localai-respawn', 'off');
    try {
      await offer(localaiGallery, '4.0.0');
      await localaiJob('/backends/upgrade/echo');
      const stale = await until('m1 stale', async () => {
        const m1 = await row('m1');
        return m1?.cwd === 'stale' ? m1 : undefined;
      }, 10_000);
      assert.equal(stale.state, 'stale');
      assert.match(stale.cwdReason, /^LocalAI's process for m1 \(pid \d+\): (its directory was replaced and deleted|it runs from echo\.backup)/);
      assert.match((await ok('ps')).stdout, /STALE: LocalAI's process for m1/);
      assert.match(await complete('m1'), /ENOENT/, "LocalAI reuses the stale process on Health alone: the seed's failure");
      const respawned = await ok('respawn', 'm1');
      assert.match(respawned.stdout, /^respawned m1 \(run by LocalAI\): pid \d+, port \d+ \(respawned through LocalAI \(shutdown, then load\): pid \d+ → \d+, from /);
      assert.equal(await complete('m1'), 'echo 4.0.0: hi');
      const unloaded = await ok('unload', 'm1');
      assert.equal(unloaded.stdout, 'unloaded m1 (run by LocalAI): LocalAI stopped it\n');
      await until('m1 gone from ps', async () => ((await row('m1')) ? undefined : true), 5000);
      assert.equal((await post('/backend/load', { model: 'm1' })).status, 200);
    } finally {
      await ok('settings', 'localai-respawn', 'on');
    }
  });

  test('a build LocalAI cannot load is rolled back, and m1 runs again from the old tree', async () => {
    await until('m1 listed', async () => ((await row('m1'))?.cwd === 'ok' ? true : undefined), 10_000);
    const broken = await echoSource(root, '5.0.0');
    await writeFile(join(broken, 'run.sh'), '#!/bin/sh\necho "this build cannot start" >&2\nexit 3\n', { mode: 0o755 });
    await offer(hangarGallery, '5.0.0', broken);
    await ok('gallery', '--refresh');
    const result = await hangar(agent, 'upgrade', 'echo');
    assert.equal(result.code, 1, `it said: ${result.stdout}${result.stderr}; m1's row: ${JSON.stringify(await row('m1'))}`);
    assert.match(result.stderr, /hangar: upgrade echo to 5\.0\.0 failed: .*LocalAI.*; rolled back to 4\.0\.0\n$/);
    await until('m1 back on the old tree', async () => ((await row('m1'))?.cwd === 'ok' ? true : undefined), 10_000);
    assert.equal(await complete('m1'), 'echo 4.0.0: hi');
  });

  test('a new backend Hangar installs is said to wait for LocalAI\'s restart; a delete stops its models in LocalAI', async () => {
    const source = await echoSource(root, 'third-1');
    await writeGallery(hangarGallery, [{ name: 'third', uri: source, version: 'third-1' }, { name: 'other', uri: await echoSource(root, 'other-1'), version: 'other-1' }]);
    await ok('gallery', '--refresh');
    const installed = await jobOf(await ok('install', 'third', '--json'));
    assert.match(installed.notice ?? '', /LocalAI will see third after its restart \(it registers backends only when it starts\)/);
    const deleted = await jobOf(await ok('delete', 'other', '--json'));
    assert.match(deleted.notice ?? '', /LocalAI: stopped m2 \(their backend is deleted\)/);
    const system = (await (await fetch(`${localai.url}/system`)).json()) as { loaded_models: Array<{ id: string }> };
    assert.deepEqual(system.loaded_models.map((m) => m.id), ['m1']);
  });

  test('a LocalAI that refuses the key, or is not there, is said in one line, and the node goes on', async () => {
    const home = join(root, 'home');
    const client = await connect({ node: agent.url, home });
    const keyed = new StandInServer({ backendsDir, models: {}, apiKeys: ['right-key-123'] });
    await keyed.start();
    try {
      await client.updateLocalaiServer({ node: 'local', server: { url: keyed.url, apiKey: 'wrong' } });
      const refused = await until('the refusal', async () => {
        const view = await client.localaiServer({ node: 'local' });
        return view.status && !view.status.connected ? view : undefined;
      }, 5000);
      assert.equal(refused.status!.reason, `LocalAI at ${keyed.url} refused the API key (401): give Hangar one of its API keys`);
      assert.equal(refused.hasApiKey, true);
      // A user on the command line sees it too, with no hint to install a LocalAI of Hangar's own.
      const status = await hangar(agent, 'localai', 'status');
      assert.equal(status.code, 0, status.stderr);
      assert.match(status.stdout, new RegExp(`^LocalAI server: not linked: LocalAI at ${keyed.url} refused the API key \\(401\\): give Hangar one of its API keys$`, 'm'));
      assert.doesNotMatch(status.stdout, /install it/);
      await keyed.stop();
      await client.updateLocalaiServer({ node: 'local', server: { url: keyed.url, apiKey: '' } });
      const gone = await client.localaiServer({ node: 'local' });
      assert.match(gone.status?.reason ?? '', /^cannot reach LocalAI at http:\/\/127\.0\.0\.1:\d+: connection refused$/);
      assert.match((await hangar(agent, 'localai', 'status')).stdout, /^LocalAI server: not linked: cannot reach LocalAI at http:\/\/127\.0\.0\.1:\d+: connection refused$/m);
      assert.equal(gone.hasApiKey, false);
      assert.equal((await hangar(agent, 'ls')).code, 0);
    } finally {
      client.close();
      await keyed.stop();
    }
  });
});

