// Hangar beside a running LocalAI (the stand-in written from LocalAI's code), told the truth: LocalAI read at the
// moment of each swap and again after it (a model loaded just before or during a swap ends on the live tree), backend
// names taken as LocalAI's loader takes them (any case, its alias map), LocalAI unreachable during a swap (the models
// it could not reload said, shown stale, reloaded when it answers again), LocalAI killed (its rows not ready, actions
// refused with why), a stray `--addr` process that is none of LocalAI's, and MEM as the process's RSS.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cp, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { JobView, ProcessView } from '../../../shared/types.ts';
import { connect } from '../../agent/connect.ts';
import { hangar, json, read, startAgent, until, type Agent } from '../../agent/test-agent.ts';
import { echoSource, tempDir, writeGallery } from '../../core/testing/fixtures.ts';
import { StandInServer, type StandInServerOptions } from '../testing/standin-server.ts';
import { TcpGate } from '../testing/tcp-gate.ts';
import { portsFor } from '../../core/testing/test-ports.ts';

describe('Hangar beside a running LocalAI server tells the truth', () => {
  let root: string;
  let agent: Agent;
  let localai: StandInServer;
  let gate: TcpGate;
  let backendsDir: string;
  let gallery: string;
  /** LocalAI's own backend gallery. */
  let localaiGallery: string;
  let version = 1;
  /** Model configs: names in other cases and by LocalAI's alias, and models loaded around swaps. */
  const models = { m1: 'echo', late: 'echo', mid: 'echo', up: 'ECHO', al: 'llama' };
  const standIn = (port?: number): StandInServerOptions => ({ backendsDir, models, gallery: localaiGallery, indexCacheMs: 0, healthAttempts: 200, healthIntervalMs: 20, loadFailureCooldownMs: 0, ...(port !== undefined && { address: { host: '127.0.0.1', port } }) });

  const offer = async (echo: string, llama: string) => writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, echo), version: echo }, { name: 'llama-cpp', uri: await echoSource(root, llama), version: llama }]);
  const ok = async (...args: string[]) => {
    const result = await hangar(agent, ...args);
    assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
    return result;
  };
  const row = async (model: string) => (await read(agent, 'processes')).find((p) => p.model === model);
  const load = async (model: string) => {
    const response = await fetch(`${localai.url}/backend/load`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model }) });
    assert.equal(response.status, 200, await response.text());
  };
  const fromLiveTree = async (model: string, backend: string) => {
    const pid = localai.pids().get(model)!;
    const [cwd, live] = await Promise.all([stat(`/proc/${pid}/cwd`, { bigint: true }), stat(join(backendsDir, backend), { bigint: true })]);
    return cwd.dev === live.dev && cwd.ino === live.ino;
  };
  /** A new echo and llama-cpp build offered, and Hangar's gallery read again. */
  const newBuilds = async () => {
    version++;
    await offer(`${version}.0.0`, `llama-${version}`);
    await ok('gallery', '--refresh');
    return `${version}.0.0`;
  };
  const upgrade = async (backend: string) => JSON.parse((await ok('upgrade', backend, '--json')).stdout) as JobView;

  before(async () => {
    root = await tempDir('localai-truth');
    const home = join(root, 'home');
    backendsDir = join(home, 'backends');
    gallery = join(root, 'index.yaml');
    localaiGallery = join(root, 'localai-index.yaml');
    await offer('1.0.0', 'llama-1');
    agent = await startAgent(home, gallery, ['--ports', portsFor([24320, 24339], [28920, 28939]).join('-'), '--localai-poll', '5000']);
    await ok('install', 'echo');
    await ok('install', 'llama-cpp');
    localai = new StandInServer(standIn());
    await localai.start();
    gate = new TcpGate(Number(new URL(localai.url).port));
    await gate.open();
    await load('m1');
    const client = await connect({ node: agent.url, home });
    try {
      await client.updateLocalaiServer({ node: 'local', server: { url: gate.url } });
    } finally {
      client.close();
    }
    await until('m1 listed', async () => ((await row('m1'))?.cwd === 'ok' ? true : undefined), 10_000);
  });

  after(async () => {
    agent?.child.kill('SIGKILL');
    await gate?.cut();
    await localai?.stop();
    await rm(root, { recursive: true, force: true });
  });

  test("a model whose config names its backend in another case or by LocalAI's alias is matched, and reloaded by a swap", async () => {
    await load('up');
    await load('al');
    const [up, al] = await until('up and al matched', async () => {
      const [u, a] = [await row('up'), await row('al')];
      return u?.cwd === 'ok' && a?.cwd === 'ok' ? [u, a] : undefined;
    }, 10_000);
    assert.deepEqual([up.pid, up.dir], [localai.pids().get('up'), join(backendsDir, 'echo')]);
    assert.deepEqual([al.pid, al.dir], [localai.pids().get('al'), join(backendsDir, 'llama-cpp')]);
    await newBuilds();
    const job = await upgrade('llama-cpp');
    assert.match(job.notice ?? '', new RegExp(`^LocalAI: al reloaded from llama-${version} in \\d+\\.\\d s$`));
    assert.ok(await fromLiveTree('al', 'llama-cpp'));
    const echoJob = await upgrade('echo');
    assert.match(echoJob.notice ?? '', /up reloaded from/);
    assert.ok(await fromLiveTree('up', 'echo'));
  });

  test('a model loaded just before a swap is reloaded by it: LocalAI is read at the moment of the swap', async () => {
    const next = await newBuilds();
    await load('late');
    const job = await upgrade('echo');
    assert.match(job.notice ?? '', new RegExp(`late reloaded from ${next.replaceAll('.', '\\.')}`));
    assert.ok(await fromLiveTree('late', 'echo'));
  });

  test('a model loaded while swaps run ends on the live tree each time, whatever the moment', async () => {
    for (let round = 0; round < 4; round++) {
      await fetch(`${localai.url}/backend/shutdown`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'mid' }) });
      await newBuilds();
      const loading = (async () => {
        await new Promise((done) => setTimeout(done, Math.floor(Math.random() * 400)));
        await load('mid');
      })();
      const job = await upgrade('echo');
      await loading;
      assert.equal(job.state, 'done');
      // LocalAI answered the load: whichever tree it started from, the job or the link's look after it put it on the live one.
      await until(`mid on the live tree (round ${round})`, async () => ((await fromLiveTree('mid', 'echo')) ? true : undefined), 10_000);
    }
  });

  test("MEM is the process's RSS, and the memory LocalAI reports for it is shown under LocalAI's name", async () => {
    // Under the POSIX layer a row shows the last background sample: none on its first view.
    const m1 = await until('m1 measured', async () => {
      const now = await row('m1');
      return now?.rss != null ? now : undefined;
    }, 10_000);
    const rss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${m1.pid}/status`, 'utf8'))![1]) * 1024;
    assert.ok(m1.rss !== null && Math.abs(m1.rss - rss) < rss * 0.5, `rss ${m1.rss} vs VmRSS ${rss}`);
    // The echo backend reports its own RSS in StatusResponse.memory; LocalAI's /backend/monitor passes it on.
    const reported = await until('the memory LocalAI reports', async () => /\(LocalAI reports ([\d.]+) MiB for it\)$/.exec((await row('m1'))?.message ?? '')?.[1], 10_000);
    assert.ok(Math.abs(Number(reported) * 1024 * 1024 - rss) < rss * 0.5, `LocalAI reports ${reported} MiB, VmRSS is ${rss} bytes`);
  });

  test('a model whose process hangs is not ready while LocalAI still lists it loaded, and is ready again once it answers', async () => {
    // Which process is m1's: the loads racing the swaps before may have left Hangar a guess (LocalAI does not say), and
    // a respawn through Hangar, with nothing else loading, makes it known.
    await ok('respawn', 'm1');
    // From ready: a process the last swap left on a replaced tree shows stale first, whatever else it does.
    const pid = await until('m1 ready', async () => {
      const now = await row('m1');
      return now?.state === 'ready' && now.pid === localai.pids().get('m1') ? now.pid : undefined;
    }, 20_000, async () => `its row: ${JSON.stringify(await row('m1'))}, LocalAI's pid ${localai.pids().get('m1')}`);
    process.kill(pid, 'SIGSTOP');
    try {
      const hung = await until('m1 unresponsive', async () => {
        const now = await row('m1');
        return now?.state === 'unresponsive' ? now : undefined;
      }, 20_000, async () => `its row: ${JSON.stringify(await row('m1'))}`);
      assert.equal(hung.pid, pid);
      assert.match(hung.message ?? '', new RegExp(`^its process \\(pid ${pid}\\) gives no Health answer within 2000 ms \\(since \\d\\d:\\d\\d:\\d\\d UTC\\); LocalAI still lists the model loaded$`));
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await until('m1 ready again', async () => ((await row('m1'))?.state === 'ready' ? true : undefined), 20_000);
  });

  test('a stray --addr process in a backend directory is none of LocalAI\'s: not shown, not reloaded; a respawn names the new pid', async () => {
    // Started through a shell that exits: the stray is no child of LocalAI's process.
    const starter = spawn('sh', ['-c', `(cd ${JSON.stringify(join(backendsDir, 'echo'))} && exec sh -c 'while :; do sleep 1; done' stray --addr 127.0.0.1:9) >/dev/null 2>&1 & echo $!`], { stdio: ['ignore', 'pipe', 'ignore'] });
    const strayPid = Number((await new Promise<string>((done) => starter.stdout!.once('data', (d: Buffer) => done(d.toString())))).trim());
    try {
      await newBuilds();
      const job = await upgrade('echo');
      assert.equal(job.state, 'done');
      assert.ok(!(await json<ProcessView[]>(agent, 'ps')).some((p) => p.pid === strayPid));
      const before = (await row('m1'))!.pid;
      const respawned = await ok('respawn', 'm1');
      assert.match(respawned.stdout, new RegExp(`pid ${before} → ${localai.pids().get('m1')}, from `));
    } finally {
      process.kill(strayPid, 'SIGKILL');
    }
  });

  test("LocalAI's own upgrade becomes a job saying what was reloaded; LocalAI putting back an older build than Hangar's is named, with the way out", async () => {
    await newBuilds();
    const ours = `${version}.0.0`;
    await upgrade('echo');
    await writeGallery(localaiGallery, [{ name: 'echo', uri: await echoSource(root, '0.9.0'), version: '0.9.0' }]);
    const since = new Date().toISOString();
    const started = (await (await fetch(`${localai.url}/backends/upgrade/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).json()) as { id: string };
    await until("LocalAI's upgrade done", async () => (((await (await fetch(`${localai.url}/backends/jobs/${started.id}`)).json()) as { processed: boolean }).processed ? true : undefined), 20_000);
    const job = await until("a job for LocalAI's own swap", async () => (await read(agent, 'jobs')).find((j) => j.startedAt >= since && j.backend === 'echo' && j.finishedAt !== null), 20_000);
    assert.equal(job.state, 'done', job.error ?? '');
    assert.match(job.notice ?? '', /^LocalAI: (\w+ reloaded in \d+\.\d s; )*m1 reloaded in \d+\.\d s(; \w+ reloaded in \d+\.\d s)* after a swap of echo Hangar did not make \(LocalAI's backends page or its auto-upgrade\), now 0\.9\.0; /);
    assert.ok(job.notice!.includes(`LocalAI replaced echo ${ours}, which Hangar installed, with the older 0.9.0`), job.notice!);
    assert.match(job.notice!, /Turn LocalAI's auto-upgrade off, or give LocalAI the gallery Hangar uses \(--backend-galleries\)/);
    assert.ok(await fromLiveTree('m1', 'echo'));
  });

  test("a LocalAI whose processes run from another backends directory is noted in the link's status", async () => {
    const otherDir = join(root, 'other-backends');
    await cp(join(backendsDir, 'echo'), join(otherDir, 'echo'), { recursive: true });
    const other = new StandInServer({ backendsDir: otherDir, models: { elsewhere: 'echo' }, healthAttempts: 200, healthIntervalMs: 20 });
    await other.start();
    const client = await connect({ node: agent.url, home: agent.home });
    try {
      const loaded = await fetch(`${other.url}/backend/load`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"elsewhere"}' });
      assert.equal(loaded.status, 200);
      await client.updateLocalaiServer({ node: 'local', server: { url: other.url } });
      // The note on the backends LocalAI lists comes with its first read; the one on where its processes run comes once
      // they are read too (under posix one lsof, later).
      const view = await until('the note on where its processes run', async () => {
        const v = await client.localaiServer({ node: 'local' });
        return v.status?.backendsNote?.includes('runs backends from') ? v : undefined;
      }, 10_000);
      assert.match(view.status!.backendsNote!, new RegExp(`^LocalAI runs backends from ${otherDir}, not from this node's ${backendsDir}: Hangar's swaps do not touch those`));
    } finally {
      await client.updateLocalaiServer({ node: 'local', server: { url: gate.url } });
      client.close();
      await other.stop();
    }
    await until('m1 listed again', async () => ((await row('m1'))?.cwd === 'ok' ? true : undefined), 10_000);
  });

  test('a backend deleted while LocalAI still lists it says so, in the job and in the link\'s status', async () => {
    await load('al');
    await until('al listed', async () => ((await row('al'))?.cwd === 'ok' ? true : undefined), 10_000);
    const job = JSON.parse((await ok('delete', 'llama-cpp', '--json')).stdout) as JobView;
    assert.match(job.notice ?? '', /LocalAI: stopped al \(their backend is deleted\)/);
    assert.match(job.notice ?? '', /LocalAI still lists llama-cpp until its restart \(it registers backends only when it starts\): a load of a model on llama-cpp waits out its health attempts, about 40 s, then fails/);
    const client = await connect({ node: agent.url, home: agent.home });
    try {
      const view = await client.localaiServer({ node: 'local' });
      assert.match(view.status?.backendsNote ?? '', /^LocalAI still lists llama-cpp, deleted from .*: a load of a model on it waits out its health attempts \(about 40 s\), then fails, until LocalAI restarts$/);
    } finally {
      client.close();
    }
    const loaded = await fetch(`${localai.url}/backend/load`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'al' }) });
    assert.equal(loaded.status, 500, 'LocalAI dials the deleted run file as an address, and gives up after its health attempts');
  });

  test('a swap while LocalAI cannot be reached says which models it could not reload, shows them stale, and reloads them when LocalAI answers', async () => {
    await gate.cut();
    try {
      await until('the link down', async () => ((await row('m1'))?.message?.startsWith('LocalAI is not running (since ') ? true : undefined), 15_000);
      const next = await newBuilds();
      const job = await upgrade('echo');
      assert.equal(job.state, 'done');
      assert.match(job.notice ?? '', /LocalAI: could not reload (\w+, )*m1(, \w+)* \(LocalAI is not running \(since \d\d:\d\d:\d\d UTC\)\): they run from the replaced tree, shown stale, and are reloaded when LocalAI answers again/);
      const m1 = (await row('m1'))!;
      assert.equal(m1.cwd, 'stale');
      assert.match(m1.cwdReason, /^not reloaded after the swap of echo: /);
      const refused = await hangar(agent, 'respawn', 'm1');
      assert.equal(refused.code, 4);
      assert.match(refused.stderr, /LocalAI is not running \(since \d\d:\d\d:\d\d UTC\): cannot respawn m1/);
      await gate.open();
      await until('m1 reloaded once LocalAI answers', async () => ((await row('m1'))?.cwd === 'ok' && (await fromLiveTree('m1', 'echo')) ? true : undefined), 20_000);
      const answer = await fetch(`${localai.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm1', prompt: 'hi' }) });
      assert.equal(((await answer.json()) as { choices: Array<{ text: string }> }).choices[0]!.text, `echo ${next}: hi`);
    } finally {
      await gate.open();
    }
  });

  test('LocalAI killed: its rows are not ready and say since when it is not running; they go once it runs again', async () => {
    const port = Number(new URL(localai.url).port);
    // Linked straight to LocalAI's port, as a user links it: nothing listens there once it is killed.
    const client = await connect({ node: agent.url, home: agent.home });
    try {
      await client.updateLocalaiServer({ node: 'local', server: { url: localai.url } });
    } finally {
      client.close();
    }
    await until('m1 listed', async () => ((await row('m1'))?.cwd === 'ok' ? true : undefined), 10_000);
    await localai.crash();
    const m1 = await until('rows say LocalAI is not running', async () => {
      const r = await row('m1');
      return r && /^LocalAI is not running \(since \d\d:\d\d:\d\d UTC\)$/.test(r.message ?? '') ? r : undefined;
    }, 15_000);
    assert.notEqual(m1.state, 'ready');
    assert.equal(m1.loaded, false);
    const restart = await hangar(agent, 'restart', 'm1');
    assert.equal(restart.code, 4);
    assert.match(restart.stderr, /LocalAI is not running \(since \d\d:\d\d:\d\d UTC\): cannot respawn m1/);
    localai = new StandInServer(standIn(port));
    await localai.start();
    await until('the old rows gone', async () => ((await row('m1')) ? undefined : true), 15_000);
  });
});
