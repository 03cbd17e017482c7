// Nothing Hangar did not start is killed unless the user says so: a reinstall leaves a user's process in the
// backend directory running and names it; stop-process stops one stale process after confirmation and refuses
// every pid that is not a stale or supervised process of this home. A real agent, real processes.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { isAlive } from '../core/supervisor/identity.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { answering, hangar, json, startAgent, type Agent } from './test-agent.ts';

async function gone(pid: number, withinMs = 5000): Promise<boolean> {
  for (const end = Date.now() + withinMs; Date.now() < end; await delay(20)) if (!isAlive(pid)) return true;
  return false;
}

/** `hangar ...` with `answer` typed at its prompt. */
describe('processes Hangar did not start', () => {
  let root: string;
  let agent: Agent;
  const users: ChildProcess[] = [];
  /** A user's process with its cwd in the echo backend's live directory. */
  const userProcess = async () => {
    const child = spawn('sleep', ['300'], { cwd: join(agent.home, 'backends', 'echo'), stdio: 'ignore' });
    await once(child, 'spawn');
    users.push(child);
    return child.pid!;
  };

  before(async () => {
    root = await tempDir('unsupervised');
    const gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    agent = await startAgent(join(root, 'home'), gallery);
    assert.equal((await hangar(agent, 'install', 'echo')).code, 0);
  });

  after(async () => {
    for (const child of users) child.kill('SIGKILL');
    agent.child.kill('SIGTERM');
    await once(agent.child, 'exit');
    await rm(root, { recursive: true, force: true });
  });

  test("a reinstall stops and respawns Hangar's backend, leaves a user's sleep running, and names it", async () => {
    const before = await json<{ pid: number }>(agent, 'load', 'echo', 'm1');
    const sleeper = await userProcess();
    const reinstall = await hangar(agent, 'install', 'echo', '--force');
    assert.equal(reinstall.code, 0, reinstall.stderr);
    assert.match(reinstall.stderr, new RegExp(`hangar: note: left running what Hangar did not start in \\S+: pid ${sleeper} \\(sleep 300\\)`));
    assert.ok(isAlive(sleeper), "the user's sleep survived the reinstall");
    assert.equal(await gone(before.pid), true);
    const [after] = await json<Array<{ pid: number; cwd: string }>>(agent, 'ps');
    assert.notEqual(after?.pid, before.pid);
    assert.equal(after?.cwd, 'ok');
    const seen = (await json<Array<{ pid: number; status: string; supervised: boolean }>>(agent, 'scan')).find((s) => s.pid === sleeper);
    assert.deepEqual([seen?.status, seen?.supervised], ['stale', false]);
  });

  test('stop-process asks, naming the pid and command line; only "y" stops it', async () => {
    const sleeper = (await json<Array<{ pid: number; status: string; supervised: boolean }>>(agent, 'scan')).find((s) => !s.supervised && s.status === 'stale')!.pid;
    const declined = await answering(agent, 'n\n', 'stop-process', String(sleeper));
    assert.equal(declined.code, 1);
    assert.match(declined.stderr, new RegExp(`^stop pid ${sleeper} \\(sleep 300\\)\\? \\[y/N\\] hangar: pid ${sleeper} \\(sleep 300\\) was not stopped\\n$`));
    assert.ok(isAlive(sleeper));
    const agreed = await answering(agent, 'y\n', 'stop-process', String(sleeper));
    assert.equal(agreed.code, 0, agreed.stderr);
    assert.equal(await gone(sleeper), true);
  });

  test('stop-process refuses a pid that is not a stale or supervised process of this home', async () => {
    const elsewhere = spawn('sleep', ['300'], { cwd: root, stdio: 'ignore' });
    await once(elsewhere, 'spawn');
    users.push(elsewhere);
    const live = await userProcess();
    const codes: number[] = [];
    for (const pid of [elsewhere.pid!, live, agent.child.pid!, process.pid]) {
      const refused = await hangar(agent, 'stop-process', String(pid), '--yes');
      codes.push(refused.code);
      assert.ok(isAlive(pid), `pid ${pid} was killed`);
    }
    assert.deepEqual(codes, [3, 5, 3, 3], 'each refused: 3 for none of the backends\' processes, 5 for one Hangar did not start whose directory is live');
    assert.match((await hangar(agent, 'stop-process', String(live), '--yes')).stderr, /was not started by Hangar and its directory is live/);
    assert.match((await hangar(agent, 'stop-process', String(elsewhere.pid), '--yes')).stderr, /is not a process of this node's backends/);
    assert.match((await hangar(agent, 'stop-process', 'abc', '--yes')).stderr, /stop-process wants a PID/);
  });

  test('the node refuses the same pids when asked directly, past the CLI', async () => {
    const { connect } = await import('./connect.ts');
    const client = await connect({ node: agent.url, home: agent.home });
    const elsewhere = spawn('sleep', ['300'], { cwd: root, stdio: 'ignore' });
    await once(elsewhere, 'spawn');
    users.push(elsewhere);
    try {
      await assert.rejects(client.stopProcess({ node: 'local', pid: elsewhere.pid! }), /is not a process of this node's backends/);
      await assert.rejects(client.stopProcess({ node: 'local', pid: 1.5 } as never), /pid must be an integer/);
      await assert.rejects(client.stopProcess({ node: 'local', pid: 1 } as never), /pid must be 2 or more/);
    } finally {
      client.close();
    }
    assert.ok(isAlive(elsewhere.pid!), 'the process the call named is alive');
  });

  test('a reinstall with --stop-unsupervised names each process it stopped that Hangar did not start', async () => {
    await json(agent, 'load', 'echo', 'm3');
    const sleeper = await userProcess();
    const reinstall = await hangar(agent, 'install', 'echo', '--force', '--stop-unsupervised');
    assert.equal(reinstall.code, 0, reinstall.stderr);
    assert.equal(await gone(sleeper), true, 'stopped because the user said so');
    assert.match(reinstall.stderr, new RegExp(`hangar: note: stopped, as asked, what Hangar did not start in \\S+: [^\\n]*\\bpid ${sleeper} \\(sleep 300\\)`));
    assert.doesNotMatch(reinstall.stderr, /left running/);
    await hangar(agent, 'stop', 'm3');
  });

  test('delete --stop-unsupervised stops what Hangar did not start too', async () => {
    await json(agent, 'load', 'echo', 'm2');
    const sleeper = await userProcess();
    const deleted = await hangar(agent, 'delete', 'echo', '--stop-unsupervised');
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.doesNotMatch(deleted.stderr, /left running/);
    assert.equal(await gone(sleeper), true, 'stopped because the user said so');
  });
});
