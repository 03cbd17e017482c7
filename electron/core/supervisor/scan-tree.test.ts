// A scan lists what a supervised backend started (run.sh's children) as Hangar's: judged by its backend's directory,
// never offered to be stopped on its own. Real processes; backend ports 29620-29629, 28960-28969 under posix.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { Supervisor, type BackendTarget } from './supervisor.ts';
import { makeHome, startUpstream, type EchoServer, writeRelayBackend, writeScriptBackend } from './test-helpers.ts';
import { portsFor } from '../testing/test-ports.ts';

describe("a scan counts a backend's children as Hangar's", { skip: process.platform !== 'linux' && 'reads /proc' }, () => {
  let home: ReturnType<typeof makeHome>;
  let upstream: EchoServer;
  let supervisor: Supervisor;
  let parent: BackendTarget;
  let sleeperFile: string;

  before(async () => {
    home = makeHome();
    upstream = await startUpstream(home.root);
    parent = { name: 'parent', dir: join(home.backendsDir, 'parent') };
    sleeperFile = join(home.root, 'sleeper.pid');
    // run.sh leaves a `sleep` behind, its own child, before it becomes the server.
    writeRelayBackend(parent.dir, upstream.address);
    writeScriptBackend(parent.dir, [
      `sleep 300 & echo $! > '${sleeperFile}'`,
      `RELAY_UPSTREAM=${upstream.address} exec perl "$(dirname "$0")/relay.pl" "$@"`,
    ].join('\n'));
    supervisor = new Supervisor({ ...home, runtimeEnv: { HANGAR_NODE: process.execPath }, portRange: portsFor([29620, 29629], [28960, 28969]), stopGraceMs: 1000 });
    await supervisor.start();
  });
  after(async () => {
    await supervisor.close({ stopAll: true });
    await upstream.stop();
    home.cleanup();
  });

  test("run.sh's sleep child is supervised, has its backend's verdict before and after its directory moves, and is not stopped alone", async () => {
    const { process: backend } = await supervisor.ensureRunning(parent, 'm1');
    for (let i = 0; i < 250 && !existsSync(sleeperFile); i++) await delay(20);
    const sleeper = Number(readFileSync(sleeperFile, 'utf8'));

    const before = (await supervisor.scan()).find((e) => e.pid === sleeper);
    assert.deepEqual(before && [before.command, before.supervised, before.backend, before.status, before.cwd], ['sleep 300', true, 'parent', 'ok', parent.dir]);

    // An out-of-band move: the directory the backend (and its child) runs in is no longer the backend's.
    renameSync(parent.dir, `${parent.dir}.old`);
    const scan = await supervisor.scan();
    const leader = scan.find((e) => e.pid === backend.pid);
    const moved = scan.find((e) => e.pid === sleeper);
    assert.deepEqual(leader && [leader.supervised, leader.status, leader.cwd], [true, 'stale', `${parent.dir}.old`]);
    assert.deepEqual(moved && [moved.supervised, moved.backend, moved.status, moved.cwd], [true, 'parent', 'stale', `${parent.dir}.old`]);

    await assert.rejects(supervisor.stoppable(sleeper), new RegExp(`pid ${sleeper} \\(sleep 300\\) belongs to the backend process of model m1 \\(pid ${backend.pid}\\): stop or respawn the model`));
    assert.equal((await supervisor.stoppable(backend.pid)).model, 'm1', 'the backend process itself is stopped as its model');
    renameSync(`${parent.dir}.old`, parent.dir);
    await supervisor.stop('m1');
  });
});
