// Hangar runs LocalAI, as a user does it: a real agent and the CLI, LocalAI's releases served over HTTP (the stand-in
// written from LocalAI's code as the `local-ai` binary, with its checksums files), real echo backends for its models.
// Install refuses a release whose checksum is wrong or missing; start waits for /readyz; a kill -9 is restarted;
// upgrade and rollback bring LocalAI's loaded models back, and a broken build rolls back by itself; the API key is
// never on a command line, in the logs or on the WebSocket.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import type { LocalAiRunView, LocalAiServerView } from '../../../shared/types.ts';
import { createWireClient, type SocketLike, type WireClient } from '../../../shared/wire-client.ts';
import { tokenProtocol, WS_PATH, WS_PROTOCOL } from '../../../shared/wire.ts';
import { readToken } from '../../agent/paths.ts';
import { hangar, json, startAgent, until, type Agent } from '../../agent/test-agent.ts';
import { echoSource, tempDir, writeGallery } from '../../core/testing/fixtures.ts';
import { StandInReleases, writeStandInBinary } from '../testing/standin-releases.ts';
import { releasePlatform } from './release.ts';

/** A process's arguments; none once it is gone. */
function argvOf(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return [];
  }
}

/** The pids whose parent is `pid`. */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        return Number(readFileSync(`/proc/${name}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Running, not a zombie waiting for whichever process inherited it to reap it. */
function alive(pid: number): boolean {
  try {
    return !/^[ZX]$/.test(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[0]!);
  } catch {
    return false;
  }
}

describe('Hangar runs LocalAI', () => {
  let root: string;
  let home: string;
  let agent: Agent;
  let releases: StandInReleases;
  let client: WireClient;
  /** Everything the agent sent on the WebSocket. */
  const frames: string[] = [];

  const status = () => json<LocalAiRunView>(agent, 'localai', 'status');
  const ok = async (...args: string[]) => {
    const result = await hangar(agent, ...args);
    assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
    return result;
  };
  const apiKey = async () => (await readFile(join(home, 'state', 'localai-api-key'), 'utf8')).trim();
  const call = async (view: LocalAiRunView, path: string, body?: unknown) => {
    const response = await fetch(view.url + path, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${await apiKey()}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const loaded = async (view: LocalAiRunView) => ((await call(view, '/system')).body.loaded_models as Array<{ id: string }>).map((m) => m.id).sort();
  const binaries = async () => (await readdir(join(home, 'localai')).catch(() => [] as string[])).filter((n) => n.startsWith('local-ai-')).sort();

  before(async () => {
    root = await tempDir('localai-run');
    home = join(root, 'home');
    const gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    releases = new StandInReleases(root, releasePlatform()!);
    await releases.start();
    agent = await startAgent(home, gallery, ['--localai-releases', releases.url, '--ports', '24420-24439']);
    const socket = new WebSocket(new URL(WS_PATH, agent.url.replace(/^http/, 'ws')).href, [WS_PROTOCOL, tokenProtocol((await readToken(home))!)]);
    socket.on('message', (data) => frames.push(String(data)));
    await new Promise((resolve) => socket.once('open', resolve));
    client = createWireClient(socket as unknown as SocketLike);
    await ok('install', 'echo');
    // LocalAI's model configs: m1 and m2 on the echo backend Hangar installed.
    await mkdir(join(home, 'models'), { recursive: true });
    await writeFile(join(home, 'models', 'm1.yaml'), 'name: m1\nbackend: echo\n');
    await writeFile(join(home, 'models', 'm2.yaml'), 'name: m2\nbackend: echo\n');
  });

  after(async () => {
    client?.close();
    agent?.child.kill('SIGTERM');
    if (agent) await new Promise((resolve) => agent.child.once('exit', resolve));
    await releases?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  test('a release whose checksum is wrong, unlisted or missing is refused, and nothing is installed', async () => {
    await releases.publish({ version: 'v3.0.0' }, 'wrong');
    await releases.publish({ version: 'v3.0.1' }, 'unlisted');
    await releases.publish({ version: 'v3.0.2' }, 'no-file');
    const wrong = await hangar(agent, 'localai', 'install', 'v3.0.0');
    assert.equal(wrong.code, 6);
    assert.match(wrong.stderr, /refused LocalAI v3\.0\.0: its sha256 is not the one its checksums file lists; nothing was installed \(local-ai-v3\.0\.0-\S+ has [0-9a-f]{16}…, LocalAI-v3\.0\.0-checksums\.txt lists [0-9a-f]{16}…\)/);
    const unlisted = await hangar(agent, 'localai', 'install', '3.0.1');
    assert.equal(unlisted.code, 6);
    assert.match(unlisted.stderr, /refused LocalAI v3\.0\.1: .*lists no sha256 for local-ai-v3\.0\.1-/);
    // The latest, through the releases/latest redirect: its checksums file is missing, so its binary is not even fetched.
    const missing = await hangar(agent, 'localai', 'install');
    assert.equal(missing.code, 6);
    assert.match(missing.stderr, /refused LocalAI v3\.0\.2: its checksums file .*LocalAI-v3\.0\.2-checksums\.txt answered 404/);
    assert.ok(!releases.asked.some((p) => p.endsWith(`local-ai-v3.0.2-${releasePlatform()}`)), 'the binary of a release without checksums is not downloaded');
    assert.deepEqual(await binaries(), []);
    assert.equal((await status()).state, 'not-installed');
  });

  test('install checks the sha256, and start answers once /readyz does, the key only in the environment', async () => {
    await releases.publish({ version: 'v3.2.0' });
    const installed = await ok('localai', 'install');
    assert.match(installed.stdout, /LocalAI v3\.2\.0 installed \(sha256 [0-9a-f]{12}… checked\)/);
    assert.deepEqual(await binaries(), ['local-ai-v3.2.0']);
    assert.equal((await status()).state, 'stopped');

    const started = await json<LocalAiRunView>(agent, 'localai', 'start');
    assert.equal(started.state, 'ready');
    assert.equal(started.version, 'v3.2.0');
    assert.match(started.url!, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal((await fetch(`${started.url}/readyz`)).status, 200);
    const key = await apiKey();
    assert.equal((await stat(join(home, 'state', 'localai-api-key'))).mode & 0o777, 0o600);
    assert.equal((await fetch(`${started.url}/system`)).status, 401, 'LocalAI was started with the key');
    const cmdline = (await readFile(`/proc/${started.pid}/cmdline`, 'utf8')).split('\0').slice(0, -1);
    assert.ok(!cmdline.join(' ').includes(key), 'the key is not on the command line');
    assert.deepEqual(cmdline.slice(-7), ['run', '--address', new URL(started.url!).host, '--backends-path', join(home, 'backends'), '--models-path', join(home, 'models')]);
    assert.ok((await readFile(`/proc/${started.pid}/environ`, 'utf8')).split('\0').includes(`LOCALAI_API_KEY=${key}`));

    // Linked as the server beside the node, with nothing typed.
    const link = await until('the link to the LocalAI Hangar runs', async () => {
      const view: LocalAiServerView = await client.localaiServer({ node: 'local' });
      return view.status?.connected ? view : undefined;
    }, 10_000);
    assert.equal(link.url, started.url);
    assert.equal(link.hasApiKey, true);
  });

  test('LocalAI killed with SIGKILL is started again by the restart policy, and the model processes it left are killed', async () => {
    const before = await status();
    assert.equal((await call(before, '/backend/load', { model: 'm2' })).status, 200);
    // LocalAI's model processes are its `run.sh --addr` children; one that a failed first start is still leaving may be
    // there for a moment.
    const orphans = await until('m2 runs as the one model process LocalAI started', async () => {
      const models = childrenOf(before.pid!).filter((pid) => argvOf(pid).includes('--addr'));
      return models.length === 1 ? models : undefined;
    }, 10_000);
    // Hangar has noted LocalAI's model process before it is killed.
    await until('LocalAI\'s model process noted', async () => ((await status()).processes === 1 ? true : undefined), 10_000);
    // Left running, it would end by itself once its parent is gone (as LocalAI's backends do), racing Hangar's kill.
    // Stopped, it is a backend that does not watch its parent: only Hangar ends it.
    for (const pid of orphans) process.kill(pid, 'SIGSTOP');
    process.kill(before.pid!, 'SIGKILL');
    const after = await until('LocalAI ready again', async () => {
      const view = await status();
      return view.state === 'ready' && view.pid !== before.pid ? view : undefined;
    }, 20_000);
    assert.equal(after.restarts, 1);
    assert.match(after.lastExit!, /killed by SIGKILL/);
    assert.ok(orphans.every((pid) => !alive(pid)), 'the model process of the killed LocalAI is gone');
    assert.match((await ok('localai', 'logs')).stdout, /ended by itself: killed by SIGKILL after [\d.]+ s; killed 1 process it left \(its models\)/);
    assert.equal((await fetch(`${after.url}/readyz`)).status, 200);
  });

  test('an upgrade is a gated swap: the models LocalAI had loaded are loaded again on the new build', async () => {
    const before = await status();
    assert.equal((await call(before, '/backend/load', { model: 'm1' })).status, 200);
    assert.deepEqual(await loaded(before), ['m1']);
    await releases.publish({ version: 'v3.3.0' });
    const upgraded = await ok('localai', 'upgrade');
    assert.match(upgraded.stdout, /LocalAI v3\.2\.0 → v3\.3\.0; models loaded again: m1/);
    // What the upgrade said is what ps says right after it: the new build's process of m1.
    const listed = (await json<Array<{ model: string; runBy: string; state: string; pid: number }>>(agent, 'ps')).find((p) => p.model === 'm1');
    const after = await status();
    assert.deepEqual([listed?.runBy, listed?.state], ['localai', 'ready'], JSON.stringify(listed));
    assert.ok(after.pid !== null && listed?.pid !== undefined && alive(listed.pid), `m1's process ${listed?.pid} runs`);
    assert.equal(after.state, 'ready');
    assert.equal(after.version, 'v3.3.0');
    assert.equal(after.previousVersion, 'v3.2.0');
    assert.notEqual(after.pid, before.pid);
    assert.equal(((await call(after, '/version')).body.version as string).split(' ')[0], 'v3.3.0');
    assert.deepEqual(await loaded(after), ['m1']);
    assert.deepEqual(await binaries(), ['local-ai-v3.2.0', 'local-ai-v3.3.0']);
  });

  test('a build that does not start is rolled back by itself, its models back, and the error carries its last log lines', async () => {
    const before = await status();
    await releases.publish({ version: 'v3.4.0', failStart: 'stand-in: this build is broken (bad instruction)' });
    const failed = await hangar(agent, 'localai', 'upgrade', 'v3.4.0');
    assert.equal(failed.code, 1);
    assert.match(failed.stderr, /LocalAI v3\.3\.0 → v3\.4\.0 failed: LocalAI exited before it was ready \(exit code 1\); rolled back to the previous build, which runs again with m1\n$/);
    assert.match(failed.stderr, /^LocalAI's last log lines:\n( {2}.*\n)* {2}\S+ ERR stand-in: this build is broken \(bad instruction\)\n( {2}.*\n)*hangar: LocalAI v3\.3\.0 → v3\.4\.0 failed/);
    assert.doesNotMatch(failed.stderr, /LocalAI API is listening/, 'only the failed build\'s lines');
    const after = await status();
    assert.equal(after.state, 'ready');
    assert.equal(after.version, 'v3.3.0');
    assert.equal(after.previousVersion, 'v3.2.0', 'the broken build is not kept');
    assert.notEqual(after.pid, before.pid);
    assert.deepEqual(await loaded(after), ['m1']);
    assert.equal(after.operation?.state, 'failed');
    assert.ok(after.operation!.logTail.some((l) => l.includes('this build is broken')));
    assert.deepEqual(await binaries(), ['local-ai-v3.2.0', 'local-ai-v3.3.0']);
  });

  test('rollback on request goes back to the kept build with the models loaded', async () => {
    const back = await ok('localai', 'rollback');
    assert.match(back.stdout, /LocalAI v3\.3\.0 → v3\.2\.0 \(rollback\); models loaded again: m1/);
    const after = await status();
    assert.equal(after.version, 'v3.2.0');
    assert.equal(after.previousVersion, 'v3.3.0');
    assert.deepEqual(await loaded(after), ['m1']);
  });

  test('stop sends SIGINT first; the key is in no log line and was never sent on the WebSocket', async () => {
    const running = await status();
    const stopped = await json<LocalAiRunView>(agent, 'localai', 'stop');
    assert.equal(stopped.state, 'stopped');
    assert.equal(stopped.pid, null);
    assert.match(running.link ?? '', /^linked as the LocalAI server beside this node \(pid \d+\)$/);
    assert.equal(stopped.link, null, 'no link is claimed for a LocalAI that is not running');
    assert.throws(() => process.kill(running.pid!, 0));
    const logs = await ok('localai', 'logs', '-n', '2000');
    assert.match(logs.stdout, /sending SIGINT to LocalAI \(pid \d+\)\n.*Received SIGINT, shutting down/);
    assert.doesNotMatch(logs.stdout, /sending SIGTERM/);
    const key = await apiKey();
    assert.ok(!logs.stdout.includes(key));
    await client.localaiLogs({ node: 'local' });
    await client.localaiRun({ node: 'local' });
    assert.ok(frames.length > 0);
    assert.ok(frames.every((frame) => !frame.includes(key)), 'no WebSocket frame holds the key');
  });

  test('with localai-autostart on, LocalAI starts with the agent and stops with it', async () => {
    await ok('settings', 'localai-autostart', 'on');
    client.close();
    agent.child.kill('SIGTERM');
    await new Promise((resolve) => agent.child.once('exit', resolve));
    agent = await startAgent(home, null, ['--localai-releases', releases.url, '--ports', '24420-24439']);
    const ready = await until('LocalAI started with the agent', async () => {
      const view = await status();
      return view.state === 'ready' ? view : undefined;
    }, 20_000);
    assert.equal(ready.version, 'v3.2.0');
    agent.child.kill('SIGTERM');
    await new Promise((resolve) => agent.child.once('exit', resolve));
    assert.throws(() => process.kill(ready.pid!, 0), 'LocalAI stopped with the agent');
    agent = await startAgent(home, null, ['--localai-releases', releases.url, '--ports', '24420-24439']);
  });

  test('a LocalAI left running by a killed agent is stopped by the next one, which starts its own', async () => {
    const left = await until('LocalAI started with the agent', async () => {
      const view = await status();
      return view.state === 'ready' ? view : undefined;
    }, 20_000);
    agent.child.kill('SIGKILL');
    await new Promise((resolve) => agent.child.once('exit', resolve));
    assert.ok(alive(left.pid!), 'LocalAI outlives a killed agent');
    agent = await startAgent(home, null, ['--localai-releases', releases.url, '--ports', '24420-24439']);
    assert.ok(!alive(left.pid!), 'the next agent stopped it before serving');
    const fresh = await until('LocalAI started again', async () => {
      const view = await status();
      return view.state === 'ready' ? view : undefined;
    }, 20_000);
    assert.notEqual(fresh.pid, left.pid);
    assert.match((await ok('localai', 'logs')).stdout, new RegExp(`stopped the LocalAI \\(pid ${left.pid}\\) a previous agent left running`));
  });
});

describe('Hangar runs a LocalAI binary it is given', () => {
  test('--localai-bin runs that binary as it is: its version from /version, installs and rollbacks refused', async () => {
    const root = await tempDir('localai-bin');
    const binary = join(root, 'bin', 'local-ai');
    await mkdir(join(root, 'bin'));
    await writeStandInBinary(binary, { version: 'v3.5.1' });
    const agent = await startAgent(join(root, 'home'), null, ['--localai-bin', binary, '--localai-models', join(root, 'my-models')]);
    try {
      const before = await json<LocalAiRunView>(agent, 'localai', 'status');
      assert.equal(before.state, 'stopped');
      assert.equal(before.binary, binary);
      assert.equal(before.fixedBinary, true);
      const ready = await json<LocalAiRunView>(agent, 'localai', 'start');
      assert.equal(ready.state, 'ready');
      assert.equal(ready.version, 'v3.5.1');
      assert.equal(ready.modelsPath, join(root, 'my-models'));
      assert.ok((await readFile(`/proc/${ready.pid}/cmdline`, 'utf8')).split('\0').includes(join(root, 'my-models')));
      const install = await hangar(agent, 'localai', 'install', 'v3.6.0');
      assert.equal(install.code, 4);
      assert.match(install.stderr, /this agent runs the LocalAI binary it was given \(--localai-bin .*\): it does not install LocalAI/);
      const rollback = await hangar(agent, 'localai', 'rollback');
      assert.equal(rollback.code, 4);
      assert.match(rollback.stderr, /it does not roll back LocalAI/);
    } finally {
      agent.child.kill('SIGTERM');
      await new Promise((resolve) => agent.child.once('exit', resolve));
      await rm(root, { recursive: true, force: true });
    }
  });
});
