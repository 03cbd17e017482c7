// One host per home, with real agents: a second agent, `npm start` and the desktop app's start all leave a home
// another host serves exactly as they found it, and that host's backends keep running.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { readFile, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { isAlive } from '../core/supervisor/identity.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { claimDesktopHome } from '../shell/desktop-home.ts';
import { json, startAgent, until, type Agent } from './test-agent.ts';

const run = promisify(execFile);

/** Runs a command to its end; a second host must end on its own, quickly. */
async function ended(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(command, args, { env, timeout: 20_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('one host per home', () => {
  let root: string;
  let gallery: string;
  let agent: Agent;
  let backendPid: number;
  let table: Buffer;
  let busy: string;

  before(async () => {
    root = await tempDir('one-host');
    gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    agent = await startAgent(join(root, 'home'), gallery);
    await json(agent, 'install', 'echo');
    backendPid = (await json<{ pid: number }>(agent, 'load', 'echo', 'm1')).pid;
    // The table is written shortly after the load answers: the first agent's own write must be in before the snapshot.
    table = await until('the load in the process table', async () => {
      const text = await readFile(join(agent.home, 'state', 'processes.json'));
      return text.includes('"load"') ? text : undefined;
    }, 10_000);
    busy = `hangar (pid ${agent.child.pid}) already serves this home at ${agent.url}\n`;
  });

  after(async () => {
    if (agent.child.exitCode === null) {
      agent.child.kill('SIGTERM');
      await once(agent.child, 'exit');
    }
    await rm(root, { recursive: true, force: true });
  });

  /** The home is as the first agent left it, and its backend still runs and answers through it. */
  async function untouched(): Promise<void> {
    assert.deepEqual(await readFile(join(agent.home, 'state', 'processes.json')), table);
    assert.ok(isAlive(backendPid), 'the first agent\'s backend still runs');
    const [p] = await json<Array<{ pid: number; cwd: string }>>(agent, 'ps');
    assert.deepEqual([p?.pid, p?.cwd], [backendPid, 'ok']);
  }

  test('a second agent whose listen port is taken exits at once, naming the first, and touches nothing', async () => {
    const second = await ended(process.execPath, ['dist/agent/cli.js', 'agent', '--home', agent.home, '--gallery', gallery, '--listen', new URL(agent.url).host]);
    assert.equal(second.code, 4);
    assert.equal(second.stderr, busy);
    assert.equal(second.stdout, '');
    await untouched();
  });

  test('a second agent on a free port, through a symlink to the home, is refused the same way', async () => {
    const link = join(root, 'home-link');
    await symlink(agent.home, link);
    const second = await ended(process.execPath, ['dist/agent/cli.js', 'agent', '--home', link, '--gallery', gallery, '--listen', '127.0.0.1:0']);
    assert.equal(second.code, 4);
    assert.equal(second.stderr, busy);
    await untouched();
  });

  test('npm start on the home says who serves it and exits non-zero', async () => {
    // An Electron binary that is not there sends npm start down its headless path, even where Electron is installed.
    const env = { ...process.env, HANGAR_HOME: agent.home, ELECTRON_OVERRIDE_DIST_PATH: join(root, 'no-electron') };
    const started = await ended(process.execPath, ['scripts/start.mjs'], env);
    assert.notEqual(started.code, 0);
    assert.ok(started.stderr.endsWith(busy), started.stderr);
    await untouched();
  });

  test("the desktop app's start offers the running agent's UI with the home's token and leaves the home alone", async () => {
    const token = (await readFile(join(agent.home, 'state', 'token'), 'utf8')).trim();
    const claim = await claimDesktopHome(agent.home);
    assert.deepEqual(claim, { kind: 'busy', message: busy.trim(), openUrl: `${agent.url}/#token=${token}` });
    await untouched();
  });

  test('once the agent has exited, the desktop app takes the home', async () => {
    agent.child.kill('SIGTERM');
    await once(agent.child, 'exit');
    const claim = await claimDesktopHome(agent.home);
    assert.equal(claim.kind, 'owner');
    if (claim.kind === 'owner') await claim.lock.release();
  });
});
