// Hangar linked to a broken or hostile LocalAI: every request has a deadline that holds through the body, replies are
// capped by bytes and by count, the agent's own API answers whatever LocalAI sends, a cancel ends a reload at once,
// and the API key never shows in a message, a log line or a status, never goes to a new address, and is refused where
// it could leak (a key file others can read, two lines, plain http:// to another machine).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { chmod, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ProcessView } from '../../../shared/types.ts';
import type { LocalAiServerRequest } from '../../../shared/api.ts';
import { connect } from '../../agent/connect.ts';
import { cli, hangar, json, startAgent, until, type Agent } from '../../agent/test-agent.ts';
import { echoSource, tempDir, writeGallery } from '../../core/testing/fixtures.ts';
import { HostileLocalAi } from '../testing/hostile-localai.ts';
import { StandInServer } from '../testing/standin-server.ts';

const RELOAD_WAIT_MS = 8000;
const agentArgs = ['--ports', '24340-24359', '--localai-poll', '500', '--localai-reload-wait', String(RELOAD_WAIT_MS)];

describe('Hangar linked to a hostile LocalAI', () => {
  let root: string;
  let agent: Agent;
  let agentLog = '';
  let localai: StandInServer;
  let hostile: HostileLocalAi;
  let gallery: string;
  let version = 1;

  const ok = async (...args: string[]) => {
    const result = await hangar(agent, ...args);
    assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
    return result;
  };
  const row = async (model: string) => (await json<ProcessView[]>(agent, 'ps')).find((p) => p.model === model);
  const withClient = async <T>(work: (client: Awaited<ReturnType<typeof connect>>) => Promise<T>): Promise<T> => {
    const client = await connect({ node: agent.url, home: agent.home });
    try {
      return await work(client);
    } finally {
      client.close();
    }
  };
  const status = () => withClient((c) => c.localaiServer({ node: 'local' }));
  const link = (server: LocalAiServerRequest | null) => withClient((c) => c.updateLocalaiServer({ node: 'local', server }));
  const newBuild = async () => {
    version++;
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, `${version}.0.0`), version: `${version}.0.0` }]);
    await ok('gallery', '--refresh');
  };
  /** The agent SIGKILLed mid-reload and started again: its next start loads `model` again, and says so. */
  const killedThenLoadedAgain = async (model: string) => {
    const exited = once(agent.child, 'exit');
    agent.child.kill('SIGKILL');
    await exited;
    agent = await startAgent(agent.home, gallery, agentArgs);
    agent.child.stderr!.on('data', (chunk: Buffer) => (agentLog += chunk.toString()));
    await until(`${model} loaded again`, async () => ((await row(model))?.cwd === 'ok' ? true : undefined), 20_000);
    assert.match(agentLog, new RegExp(`LocalAI: loaded ${model} again, which a swap of echo was reloading when Hangar stopped`));
  };
  const linkedToHostile = async () => {
    await link({ url: hostile.url });
    await until('m1 listed', async () => ((await row('m1'))?.cwd === 'ok' ? true : undefined), 15_000);
  };

  before(async () => {
    root = await tempDir('localai-hostile');
    const home = join(root, 'home');
    gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    agent = await startAgent(home, gallery, agentArgs);
    agent.child.stderr!.on('data', (chunk: Buffer) => (agentLog += chunk.toString()));
    await ok('install', 'echo');
    localai = new StandInServer({ backendsDir: join(home, 'backends'), models: { m1: 'echo', m2: 'echo' }, healthAttempts: 200, healthIntervalMs: 20, loadFailureCooldownMs: 0 });
    await localai.start();
    hostile = new HostileLocalAi(localai.url);
    await hostile.start();
    assert.equal((await fetch(`${localai.url}/backend/load`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m1"}' })).status, 200);
    await linkedToHostile();
  });

  after(async () => {
    agent?.child.kill('SIGKILL');
    await hostile?.stop();
    await localai?.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('a /system that sends its headers, then a byte a second, is given up at its deadline and said; the link comes back', async () => {
    hostile.spoil('/system', { kind: 'drip' });
    const started = Date.now();
    const down = await until('the link said down', async () => {
      const view = await status();
      return view.status?.connected === false ? view.status : undefined;
    }, 20_000);
    assert.match(down.reason ?? '', /^LocalAI at http:\/\/127\.0\.0\.1:\d+: no whole answer to \/system within 10 s$/);
    assert.ok(Date.now() - started < 15_000);
    hostile.mend('/system');
    await until('linked again', async () => ((await status()).status?.connected ? true : undefined), 15_000);
  });

  test('a /backend/load that never ends fails the upgrade at its deadline, and it is rolled back', async () => {
    await linkedToHostile();
    await newBuild();
    hostile.spoil('/backend/load', { kind: 'drip' }, 1);
    const started = Date.now();
    const result = await hangar(agent, 'upgrade', 'echo');
    assert.equal(result.code, 1);
    assert.match(result.stderr, new RegExp(`no whole answer to /backend/load within ${RELOAD_WAIT_MS / 1000} s; rolled back to ${version - 1}\\.0\\.0`));
    assert.ok(Date.now() - started < RELOAD_WAIT_MS + 15_000, `took ${Date.now() - started} ms`);
    await until('m1 back', async () => ((await row('m1'))?.cwd === 'ok' ? true : undefined), 15_000);
  });

  test('a cancel ends a reload at once', async () => {
    await linkedToHostile();
    await newBuild();
    hostile.spoil('/backend/load', { kind: 'hang' }, 1);
    const held = hostile.spoiled.get('/backend/load') ?? 0;
    const job = await withClient((c) => c.upgrade({ node: 'local', name: 'echo' }));
    await until('the reload waiting on a load LocalAI never answers', async () => ((hostile.spoiled.get('/backend/load') ?? 0) > held ? true : undefined), 20_000);
    const asked = Date.now();
    const ended = await withClient(async (c) => {
      await c.cancelJob({ node: 'local', id: job.id });
      return c.waitJob({ node: 'local', id: job.id });
    });
    assert.equal(ended.state, 'cancelled');
    assert.ok(Date.now() - asked < RELOAD_WAIT_MS / 2, `the cancel took ${Date.now() - asked} ms`);
    await until('m1 back', async () => ((await row('m1'))?.cwd === 'ok' ? true : undefined), 15_000);
  });

  test('an agent killed while LocalAI reloads: its next start loads again what the swap had stopped', async () => {
    await linkedToHostile();
    await newBuild();
    hostile.spoil('/backend/load', { kind: 'hang' }, 1);
    const held = hostile.spoiled.get('/backend/load') ?? 0;
    await withClient((c) => c.upgrade({ node: 'local', name: 'echo' }));
    await until('the reload waiting on a load LocalAI never answers', async () => ((hostile.spoiled.get('/backend/load') ?? 0) > held ? true : undefined), 20_000);
    assert.equal(localai.pids().get('m1'), undefined, 'm1 was shut down for its reload');
    await killedThenLoadedAgain('m1');
  });

  test('an agent killed while LocalAI reloads a model the swap found only after its renames: its next start loads that one again too', async () => {
    await linkedToHostile();
    const localaiCall = (path: string, model: string) => fetch(`${localai.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model }) });
    // LocalAI runs nothing on echo but m2, whose load begins on the tree the swap replaces and ends after its renames.
    await localaiCall('/backend/shutdown', 'm1');
    const mayStart = join(root, 'm2-may-start');
    version++;
    const held = await echoSource(root, `${version}.0.0`);
    const runSh = join(held, 'run.sh');
    await writeFile(runSh, (await readFile(runSh, 'utf8')).replace('\n', `\nwhile [ ! -e ${JSON.stringify(mayStart)} ]; do sleep 0.02; done\n`));
    await writeGallery(gallery, [{ name: 'echo', uri: held, version: `${version}.0.0` }]);
    await ok('gallery', '--refresh');
    await writeFile(mayStart, '');
    await ok('upgrade', 'echo');
    await rm(mayStart);
    await newBuild();
    const live = join(agent.home, 'backends', 'echo');
    const replaced = (await stat(live)).ino;
    const spawned = localai.spawned;
    const m2Loaded = localaiCall('/backend/load', 'm2');
    await until("m2's process started on the tree to be replaced", async () => (localai.spawned > spawned ? true : undefined), 10_000);
    hostile.spoil('/backend/load', { kind: 'hang' }, 1);
    const hung = hostile.spoiled.get('/backend/load') ?? 0;
    await withClient((c) => c.upgrade({ node: 'local', name: 'echo' }));
    await until('the swap renamed the tree m2 starts on', async () => ((await stat(live)).ino !== replaced ? true : undefined), 20_000);
    await writeFile(mayStart, '');
    assert.equal((await m2Loaded).status, 200);
    await until("the swap's reload of m2 waiting on a load LocalAI never answers", async () => ((hostile.spoiled.get('/backend/load') ?? 0) > hung ? true : undefined), 20_000);
    const journal = JSON.parse(await readFile(join(agent.home, 'backends', '.hangar', 'journal', 'echo.json'), 'utf8')) as { note: { coModels: string[] } };
    assert.deepEqual(journal.note.coModels, ['m2'], 'the model found after the renames is in the journal');
    await killedThenLoadedAgain('m2');
    assert.equal((await localaiCall('/backend/load', 'm1')).status, 200);
  });

  test('a failed respawn leaves its row not ready, saying why; the next good one clears that', async () => {
    await linkedToHostile();
    hostile.spoil('/backend/shutdown', { kind: 'body', body: '{"message":"model stopped"}' }, 1);
    hostile.spoil('/backend/load', { kind: 'body', status: 500, body: '{"loaded":null,"message":"failed to load model: grpc service not ready"}' }, 1);
    const failed = await hangar(agent, 'respawn', 'm1');
    assert.equal(failed.code, 1);
    const broken = (await row('m1'))!;
    assert.notEqual(broken.state, 'ready');
    assert.match(broken.error ?? '', /^respawn through LocalAI failed: LocalAI at .* answered \/backend\/load with 500: failed to load model: grpc service not ready$/);
    await ok('respawn', 'm1');
    const mended = (await row('m1'))!;
    assert.deepEqual([mended.state, mended.error], ['ready', null]);
  });

  test('100,000 loaded models, or a 4.4 MB /system, are refused by count and by size; the agent answers meanwhile', async () => {
    await linkedToHostile();
    const agentRss = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${agent.child.pid}/status`, 'utf8'))![1]) * 1024;
    const many = (id: string) => JSON.stringify({ backends: ['echo'], loaded_models: Array.from({ length: 100_000 }, () => ({ id })) });
    hostile.spoil('/system', { kind: 'body', body: many('') });
    const counted = await until('refused by count', async () => ((await status()).status?.reason?.includes('lists 100000 loaded models') ? (await status()).status : undefined), 10_000);
    assert.match(counted!.reason!, /lists 100000 loaded models, more than the 1024 Hangar reads$/);
    hostile.spoil('/system', { kind: 'body', body: many('model-with-a-long-name-0001') });
    await until('refused by size', async () => ((await status()).status?.reason?.endsWith('sent more than 1 MiB') ? true : undefined), 10_000);
    const slowest = await withClient(async (c) => {
      let worst = 0;
      for (let i = 0; i < 20; i++) {
        const t = Date.now();
        await c.processes({ node: 'local' });
        worst = Math.max(worst, Date.now() - t);
        await new Promise((done) => setTimeout(done, 100));
      }
      return worst;
    });
    assert.ok(slowest < 500, `the agent's slowest answer took ${slowest} ms`);
    assert.ok(agentRss() < 400 * 1024 * 1024, `the agent holds ${agentRss()} bytes`);
    hostile.mend('/system');
  });

  test('a key with a line break is refused without being shown; a new address is not given the kept key; plain http:// to another machine is refused unless allowed for that server', async () => {
    const secret = 'sk-hangar-secret-4711';
    await assert.rejects(link({ url: hostile.url, apiKey: `${secret}\nsecond-line` }), (error: Error) => {
      assert.match(error.message, /the LocalAI API key holds a space, a line break or a character outside ASCII/);
      assert.ok(!error.message.includes(secret));
      return true;
    });
    const seen: Array<string | undefined> = [];
    const recorder = await recordingServer(seen);
    const other = await recordingServer([]);
    try {
      const url = `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`;
      assert.equal((await link({ url, apiKey: secret })).hasApiKey, true);
      assert.ok(seen.includes(`Bearer ${secret}`));
      const otherSeen: Array<string | undefined> = [];
      other.removeAllListeners('request');
      other.on('request', (req, res) => {
        otherSeen.push(req.headers.authorization);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
      const moved = await link({ url: `http://127.0.0.1:${(other.address() as AddressInfo).port}` });
      assert.equal(moved.hasApiKey, false);
      assert.ok(otherSeen.length > 0 && otherSeen.every((header) => header === undefined), 'the new address was sent no key');
      const inClear = /plain http:\/\/ on another machine: .*use https:\/\/, or allow it \(Settings → LocalAI server → "Allow plain http:\/\/", or the agent's --insecure\)/;
      await assert.rejects(link({ url: 'http://10.11.12.13:8080' }), inClear);
      // Allowed for one server (0.0.0.0 is no loopback name, and refuses at once here), kept with it, and not for the next.
      const allowed = await link({ url: 'http://0.0.0.0:1', insecure: true });
      assert.deepEqual([allowed.url, allowed.insecure], ['http://0.0.0.0:1', true]);
      await assert.rejects(link({ url: 'http://10.11.12.13:8080' }), inClear);
    } finally {
      recorder.close();
      other.close();
    }
    assert.ok(!agentLog.includes(secret), "the agent's log holds the key");
    assert.ok(!JSON.stringify(await status()).includes(secret));
    await linkedToHostile();
  });

  test('a key file of two lines, or one others can read, is refused with what to do, never showing the key', async () => {
    const secret = 'sk-hangar-file-key-99';
    const file = join(root, 'localai.key');
    const start = () => cli('agent', '--home', join(root, 'other-home'), '--listen', '127.0.0.1:0', '--localai-url', hostile.url, '--localai-api-key-file', file);
    await writeFile(file, `${secret}\nleftover\n`, { mode: 0o600 });
    const twoLines = await start();
    assert.notEqual(twoLines.code, 0);
    assert.match(twoLines.stderr, new RegExp(`the LocalAI API key file ${file} holds more than one line: put the key alone in it`));
    await writeFile(file, `${secret}\n`);
    await chmod(file, 0o644);
    const readable = await start();
    assert.notEqual(readable.code, 0);
    assert.match(readable.stderr, new RegExp(`the LocalAI API key file ${file} can be read by others \\(mode 644\\): run chmod 600 ${file}`));
    for (const result of [twoLines, readable]) assert.ok(!(result.stdout + result.stderr).includes(secret));
  });
});

/** An HTTP server that records each request's Authorization header and answers like a LocalAI with nothing loaded. */
async function recordingServer(seen: Array<string | undefined>): Promise<Server> {
  const server = createServer((req, res) => {
    seen.push(req.headers.authorization);
    res.writeHead(200, { 'content-type': 'application/json' }).end(new URL(req.url ?? '/', 'http://x').pathname === '/version' ? '{"version":"v0"}' : '{}');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}
