// A build that waits before it listens: its port is chosen first, and bound by the backend only later. Another
// host never takes that port from under it; a process that does anyway makes the start move to another port, and
// the move is said. The wait is a parameter (well under a second here). Real processes; ports 29610-29619.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ProcessView } from '../../../shared/index.ts';
import { Supervisor, type BackendTarget, type PortMove } from './supervisor.ts';
import { makeHome, startEchoServer, writeEcho, writeRelayBackend, writeScriptBackend, type Home } from './test-helpers.ts';

const runtimeEnv = { HANGAR_NODE: process.execPath };

/** The first 'process' event of `model` in `state`. */
function seen(supervisor: Supervisor, model: string, state: ProcessView['state']): Promise<ProcessView> {
  return new Promise((resolve) => {
    const listener = (view: ProcessView) => {
      if (view.model !== model || view.state !== state) return;
      supervisor.off('process', listener);
      resolve(view);
    };
    supervisor.on('process', listener);
  });
}

describe('a slow start and its port', () => {
  const homes: Home[] = [];
  const supervisors: Supervisor[] = [];
  let upstream: Awaited<ReturnType<typeof startEchoServer>>;

  before(async () => {
    const home = makeHome();
    homes.push(home);
    await writeEcho(join(home.root, 'upstream'), 'upstream');
    upstream = await startEchoServer(join(home.root, 'upstream'));
  });
  after(async () => {
    await Promise.all(supervisors.map((s) => s.close({ stopAll: true })));
    await upstream.stop();
    for (const home of homes) home.cleanup();
  });

  /** A host of its own home, with a relay backend `name` that sleeps `sleepS` seconds before it listens. */
  async function host(name: string, sleepS: number, more: { portRange: [number, number]; portQuarantineMs?: number }) {
    const home = makeHome();
    homes.push(home);
    const target: BackendTarget = { name, dir: join(home.backendsDir, name) };
    writeRelayBackend(target.dir, upstream.address);
    writeScriptBackend(target.dir, `sleep ${sleepS}\nRELAY_UPSTREAM=${upstream.address} exec perl "$(dirname "$0")/relay.pl" "$@"`);
    const supervisor = new Supervisor({ ...home, runtimeEnv, stopGraceMs: 1000, ...more });
    supervisors.push(supervisor);
    await supervisor.start();
    return { supervisor, target };
  }

  test('a port taken while the build waits: the start moves to another port, and the move is said in the log, the row and an event', async () => {
    const { supervisor, target } = await host('slow', 0.6, { portRange: [29610, 29612] });
    const moves: PortMove[] = [];
    supervisor.on('port-moved', (move: PortMove) => moves.push(move));
    const starting = seen(supervisor, 'slow', 'starting');
    const loading = supervisor.load(target, 'slow');
    const { port } = await starting;
    // Someone else takes the port while the build still waits.
    const interloper = createServer((connection) => connection.destroy());
    interloper.listen(port, '127.0.0.1');
    await once(interloper, 'listening');
    try {
      const loaded = await loading;
      assert.notEqual(loaded.port, port, 'it serves on another port');
      assert.equal(moves.length, 1);
      assert.deepEqual([moves[0]!.backend, moves[0]!.model, moves[0]!.port], ['slow', 'slow', port]);
      assert.match(moves[0]!.text, new RegExp(`^port ${port} was taken while backend slow started: it died [0-9.]+s into its start; starting it again on another port \\(try 2 of 3\\)$`));
      assert.ok((await supervisor.logs('slow')).some((line) => line.text === `[hangar] ${moves[0]!.text}`), "the model's log says it");
      assert.equal(supervisor.get('slow')?.message, `moved from port ${port} to ${loaded.port}: ${port} was taken while the backend started`);
    } finally {
      interloper.close();
    }
  });

  test("another host never takes back a port whose backend is still starting: the slow start keeps it", async () => {
    // Host B's model had a port, and its process ended: the port is free, and B gave up its reservation.
    const b = await host('fast', 0, { portRange: [29613, 29619], portQuarantineMs: 0 });
    const first = await b.supervisor.load(b.target, 'b', { restart: 'never' });
    const crashed = seen(b.supervisor, 'b', 'crashed');
    process.kill(first.pid, 'SIGKILL');
    await crashed;

    // Host A's slow build is given that port (its only one), and waits before it binds it.
    const a = await host('slow2', 0.8, { portRange: [first.port, first.port] });
    const starting = seen(a.supervisor, 'a', 'starting');
    const loading = a.supervisor.load(a.target, 'a');
    assert.equal((await starting).port, first.port);

    // B starts its model again meanwhile, and would like its old port back.
    const again = await b.supervisor.restart('b');
    assert.notEqual(again.port, first.port, "B's model moved: the port is reserved by A's start");
    assert.match(again.message ?? '', new RegExp(`moved from port ${first.port} to ${again.port}: ${first.port} is in use$`));
    assert.equal((await loading).port, first.port, "A's slow start kept its port");
  });
});
