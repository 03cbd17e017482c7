// The headless agent and the `hangar` CLI, driven the way a user drives them: real processes, real sockets.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cp, readFile, rename, rm, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { isAlive } from '../core/supervisor/identity.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { hangar, json, startAgent, type Agent } from './test-agent.ts';

describe('hangar agent + CLI', () => {
  let root: string;
  let gallery: string;
  let agent: Agent;

  before(async () => {
    root = await tempDir('agent');
    gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    agent = await startAgent(join(root, 'home'), gallery);
  });

  after(async () => {
    agent.child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  });

  test('writes a random token with mode 600 and refuses a wrong one', async () => {
    const file = join(agent.home, 'state', 'token');
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.ok((await readFile(file, 'utf8')).trim().length >= 32);
    const result = await hangar(agent, '--token', 'wrong', 'ls');
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /^hangar: the agent rejected the token\n$/);
  });

  test('lists the gallery and installs with progress on stderr', async () => {
    const entries = await json<Array<Record<string, unknown>>>(agent, 'gallery');
    assert.deepEqual(entries, [
      { name: 'echo', gallery: basename(root).toLowerCase().replace(/[^a-z0-9._]+/g, '-'), version: '1.0.0', uri: entries[0]?.uri, installed: false, upgradable: false, compatible: true, meta: null },
    ]);
    const install = await hangar(agent, 'install', 'echo');
    assert.equal(install.code, 0, install.stderr);
    assert.match(install.stderr, /install echo: fetching/);
    const [echo] = await json<Array<Record<string, unknown>>>(agent, 'ls');
    const keys = ['alias', 'broken', 'digest', 'dir', 'installedAt', 'kept', 'kind', 'leftover', 'localai', 'metaBackendFor', 'name', 'previous', 'processes', 'runs', 'sha256', 'upgradable', 'upgradesUnknown', 'uri', 'version'];
    assert.deepEqual(Object.keys(echo!).sort(), keys);
    assert.deepEqual([echo!.metaBackendFor, echo!.broken, echo!.kind, echo!.runs, echo!.localai], [null, null, 'backend', 'echo', []]);
    assert.equal(echo!.version, '1.0.0');
  });

  test('a bad name or an unknown backend is one clear line and a non-zero exit', async () => {
    const bad = await hangar(agent, 'install', '../x');
    assert.equal(bad.code, 6);
    assert.match(bad.stderr, /^hangar: name may hold only .*\n$/);
    const unknown = await hangar(agent, 'install', 'nope');
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /nope/);
  });

  test('leftover restores a backup LocalAI left of a backend that is gone, and refuses what is not one', async () => {
    const backends = join(agent.home, 'backends');
    await cp(join(backends, 'echo'), join(backends, 'spare.install-backup'), { recursive: true });
    const listed = await json<Array<{ name: string; kind: string; leftover: unknown }>>(agent, 'ls');
    const spare = listed.find((b) => b.name === 'spare.install-backup');
    assert.deepEqual([spare?.kind, spare?.leftover], ['leftover', { of: 'spare', suffix: '.install-backup', restorable: true }]);
    const table = await hangar(agent, 'ls');
    assert.match(table.stdout, /spare\.install-backup .*LocalAI leftover \(restorable as spare\)/);
    const restored = await hangar(agent, 'leftover', 'spare.install-backup', 'restore');
    assert.deepEqual([restored.code, restored.stdout], [0, 'restored spare.install-backup\n']);
    assert.ok((await json<Array<{ name: string; kind: string }>>(agent, 'ls')).some((b) => b.name === 'spare' && b.kind === 'backend'));
    const wrong = await hangar(agent, 'leftover', 'echo', 'delete');
    assert.notEqual(wrong.code, 0);
    assert.deepEqual([wrong.code, wrong.stderr], [3, 'hangar: "echo" is not a working directory of a backend\n']);
    await hangar(agent, 'delete', 'spare');
  });

  test('an edited local gallery shows in the next listing', async () => {
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.1.0'), version: '1.1.0' }]);
    const deadline = Date.now() + 5000;
    let upgradable = false;
    while (!upgradable && Date.now() < deadline) {
      const [echo] = await json<Array<{ upgradable: boolean }>>(agent, 'ls');
      upgradable = echo!.upgradable;
    }
    assert.ok(upgradable, 'the new version in the edited gallery makes echo upgradable');
  });

  test('scenario 6: the seed swap done by hand shows stale in ps, and the next load respawns', async () => {
    const loaded = await json<{ pid: number; port: number; reused: boolean; message: string }>(agent, 'load', 'echo', 'm1');
    assert.match(loaded.message, /loaded m1 with echo 1\.0\.0/);
    const [listed] = await json<Array<{ model: string; pid: number; cwd: string }>>(agent, 'ps');
    assert.equal(listed?.pid, loaded.pid);
    assert.equal(listed?.cwd, 'ok');

    const live = join(agent.home, 'backends', 'echo');
    await rename(live, `${live}.install-backup`);
    await rename(await echoSource(root, '1.2.0'), live);
    await rm(`${live}.install-backup`, { recursive: true });

    const [stale] = await json<Array<{ pid: number; cwd: string; cwdReason: string }>>(agent, 'ps');
    assert.equal(stale?.pid, loaded.pid);
    assert.equal(stale?.cwd, 'stale');
    assert.match(stale?.cwdReason ?? '', /^(cwd was deleted|directory \S+\/backends\/echo was replaced \(inode changed\))$/);

    const again = await json<{ pid: number; reused: boolean; message: string }>(agent, 'load', 'echo', 'm1');
    assert.notEqual(again.pid, loaded.pid);
    assert.equal(again.reused, false);
    assert.match(again.message, /with echo 1\.2\.0/);
    assert.equal(isAlive(loaded.pid), false);
  });

  test('scenario 8: scan reports an unsupervised process with a stale cwd', async () => {
    const live = join(agent.home, 'backends', 'echo');
    const sleeper = spawn('sleep', ['60'], { cwd: live, stdio: 'ignore' });
    try {
      await rename(live, `${live}.install-backup`);
      await rename(await echoSource(root, '1.3.0'), live);
      await rm(`${live}.install-backup`, { recursive: true });
      const found = await json<Array<{ pid: number; supervised: boolean; status: string; cwd: string }>>(agent, 'scan');
      const entry = found.find((s) => s.pid === sleeper.pid);
      assert.ok(entry, `sleep ${sleeper.pid} is in the scan`);
      assert.equal(entry.supervised, false);
      assert.equal(entry.status, 'stale');
      assert.match(entry.cwd, /echo\.install-backup \(deleted\)$/);
    } finally {
      sleeper.kill('SIGKILL');
    }
  });

  test('a kill -9 shows as crashed in ps and ls, logs keep timestamps, restart brings it back, stop removes it', async () => {
    const bad = await hangar(agent, 'load', 'echo', 'k1', '--restart', 'sometimes');
    assert.notEqual(bad.code, 0);
    assert.equal(bad.stderr, 'hangar: restart must be one of never, on-failure, always\n');
    const loaded = await json<{ pid: number; port: number }>(agent, 'load', 'echo', 'k1', '--restart', 'never');
    process.kill(loaded.pid, 'SIGKILL');
    type Row = { model: string; pid: number; state: string; restarts: number; policy: string; exit: { signal: string } | null; cpu: number | null; rss: number | null };
    let row: Row | undefined;
    for (let i = 0; i < 100 && row?.state !== 'crashed'; i++) {
      row = (await json<Row[]>(agent, 'ps')).find((p) => p.model === 'k1');
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual([row?.pid, row?.state, row?.policy, row?.exit?.signal], [loaded.pid, 'crashed', 'never', 'SIGKILL']);
    const ps = await hangar(agent, 'ps');
    assert.match(ps.stdout, /^MODEL +BACKEND +PID +PORT +STATE +↺ +RESTART +UP +CPU +MEM +CWD +NOTE$/m);
    assert.match(ps.stdout, new RegExp(`^k1 +echo +${loaded.pid} +${loaded.port} +crashed +0 +never +- +- +- +ok +killed by SIGKILL at `, 'm'));
    const ls = await hangar(agent, 'ls');
    assert.match(ls.stdout, /k1:\d+ \(CRASHED\).* 1 crashed$/m);
    assert.doesNotMatch(ls.stdout, / ok$/m);

    const logs = await hangar(agent, 'logs', 'k1');
    assert.match(logs.stdout, /^\d{4}-\d\d-\d\dT\S+Z echo: listening on 127\.0\.0\.1:\d+$/m);
    assert.match(logs.stdout, new RegExp(`Z ----- pid ${loaded.pid} was killed by SIGKILL -----$`, 'm'));

    const restarted = await hangar(agent, 'restart', 'k1');
    assert.equal(restarted.code, 0, restarted.stderr);
    assert.match(restarted.stdout, new RegExp(`^restarted k1: pid \\d+, port ${loaded.port}\n$`));
    const back = (await json<Row[]>(agent, 'ps')).find((p) => p.model === 'k1')!;
    assert.deepEqual([back.state, back.restarts], ['ready', 1]);
    assert.match((await hangar(agent, 'ls')).stdout, new RegExp(`k1:${back.pid} ↺1[ \\n]`));
    assert.ok(back.rss! > 0 && back.cpu !== null, 'CPU and memory of a live process');
    assert.match((await hangar(agent, 'ps')).stdout, new RegExp(`^k1 +echo +${back.pid} +${loaded.port} +ready +1 +never +\\d+s +[\\d.]+% +[\\d.]+ MiB `, 'm'));

    assert.equal((await hangar(agent, 'stop', 'k1')).code, 0);
    assert.equal((await json<Row[]>(agent, 'ps')).find((p) => p.model === 'k1'), undefined);
  });

  test('load --restart-delay and --max-restarts are kept for the model and shown in ps; bad values (and a bad --start-timeout) are refused', async () => {
    const badDelay = await hangar(agent, 'load', 'echo', 'r1', '--restart-delay', 'soon');
    assert.notEqual(badDelay.code, 0);
    assert.match(badDelay.stderr, /--restart-delay wants a time such as 500ms or 2s, got "soon"/);
    const badLimit = await hangar(agent, 'load', 'echo', 'r1', '--max-restarts', '0');
    assert.notEqual(badLimit.code, 0);
    assert.equal(badLimit.stderr, 'hangar: max restarts must be at least 1\n');
    const badStart = await hangar(agent, 'load', 'echo', 'r1', '--start-timeout', '0');
    assert.notEqual(badStart.code, 0);
    assert.match(badStart.stderr, /A start may take at least a second/);
    await json(agent, 'load', 'echo', 'r1', '--restart-delay', '250ms', '--max-restarts', '3', '--start-timeout', '900');
    type Row = { model: string; policy: string; restartDelayMs: number; maxRestarts: number };
    const row = (await json<Row[]>(agent, 'ps')).find((p) => p.model === 'r1');
    assert.deepEqual([row?.policy, row?.restartDelayMs, row?.maxRestarts], ['on-failure', 250, 3]);
    assert.match((await hangar(agent, 'ps')).stdout, /^r1 +echo +\d+ +\d+ +ready +0 +on-failure 250ms ×3 /m);
    await json(agent, 'load', 'echo', 'r1', '--restart-delay', '2s');
    const again = (await json<Row[]>(agent, 'ps')).find((p) => p.model === 'r1');
    assert.deepEqual([again?.restartDelayMs, again?.maxRestarts], [2000, 3], 'a later load changes what it names and keeps the rest');
    assert.equal((await hangar(agent, 'stop', 'r1')).code, 0);
  });

  test('settings start-timeout takes 10 s to a day, for the node or one backend', async () => {
    const tooShort = await hangar(agent, 'settings', 'start-timeout', '5');
    assert.notEqual(tooShort.code, 0);
    assert.match(tooShort.stderr, /A start may take 10 s to a day/);
    assert.equal((await hangar(agent, 'settings', 'start-timeout', '1200')).code, 0);
    assert.match((await hangar(agent, 'settings')).stdout, /start-timeout +1200 s/);
    assert.equal((await hangar(agent, 'settings', 'start-timeout', '600')).code, 0);

    assert.equal((await hangar(agent, 'settings', 'start-timeout', '1800', '--backend', 'echo')).code, 0);
    assert.match((await hangar(agent, 'settings')).stdout, /start-timeout --backend echo +1800 s +over the node's for this backend/);
    const badName = await hangar(agent, 'settings', 'start-timeout', '1800', '--backend', '../echo');
    assert.notEqual(badName.code, 0, 'a backend name is checked as everywhere');
    assert.match((await hangar(agent, 'settings', 'ports', '30100-30200', '--backend', 'echo')).stderr, /--backend goes with start-timeout only/);
    assert.equal((await hangar(agent, 'settings', 'start-timeout', 'default', '--backend', 'echo')).code, 0);
    assert.doesNotMatch((await hangar(agent, 'settings')).stdout, /--backend echo/);
  });

  test('SIGTERM stops the agent cleanly and leaves no backend running', async () => {
    const { pid } = await json<{ pid: number }>(agent, 'load', 'echo', 'm2');
    assert.ok(isAlive(pid));
    agent.child.kill('SIGTERM');
    const [code] = (await once(agent.child, 'exit')) as [number];
    assert.equal(code, 0);
    assert.equal(isAlive(pid), false);
  });
});

describe("hangar agent on LocalAI's real backend gallery", () => {
  const fixture = join(import.meta.dirname, '../../bench/fixtures/localai-backend-index.yaml');
  let root: string;
  let agent: Agent;

  before(async () => {
    root = await tempDir('agent-localai');
    agent = await startAgent(join(root, 'home'), fixture);
  });

  after(async () => {
    agent.child.kill('SIGTERM');
    await once(agent.child, 'exit');
    await rm(root, { recursive: true, force: true });
  });

  test('gallery --json lists every entry, and meta llama-cpp resolves to the CPU build here', async () => {
    const text = await readFile(fixture, 'utf8');
    const topLevelEntries = text.split('\n').filter((line) => line.startsWith('- ')).length;
    type Entry = { name: string; compatible: boolean; meta: { resolves: string | null; capability: string | null } | null };
    const entries = await json<Entry[]>(agent, 'gallery');
    assert.equal(entries.length, topLevelEntries);
    const llama = entries.find((e) => e.name === 'llama-cpp');
    assert.deepEqual([llama?.meta?.resolves, llama?.meta?.capability], ['cpu-llama-cpp', 'default']);
    assert.equal(entries.find((e) => e.name === 'cuda12-llama-cpp')?.compatible, false, 'a CUDA build on a machine without NVIDIA');
  });
});
