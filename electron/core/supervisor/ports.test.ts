// Port reservations across hosts: two pools (in one process or two) never hand out the same port, a reservation
// outlives its quarantine no longer, and a dead host's reservations are free at once. Ports 29560-29579.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { PortPool } from './ports.ts';
import { TS_NODE } from '../testing/ts-node.ts';

test('two hosts allocating from one range never hand out the same port', async () => {
  const first = new PortPool([29560, 29562], 60_000);
  const second = new PortPool([29560, 29562], 60_000);
  try {
    assert.deepEqual([await first.allocate(), await first.allocate()], [29560, 29561]);
    assert.equal(await second.allocate(), 29562, "the first host's ports are skipped although nothing listens on them yet");
    await assert.rejects(second.allocate(), /no free port in 29560-29562/);
  } finally {
    first.close();
    second.close();
  }
});

test('a released port stays reserved through its quarantine, then another host may have it', async () => {
  const first = new PortPool([29565, 29565], 200);
  const second = new PortPool([29565, 29565], 200);
  try {
    first.release(await first.allocate());
    await assert.rejects(second.allocate(), /no free port/);
    await delay(300);
    assert.equal(await second.allocate(), 29565);
  } finally {
    first.close();
    second.close();
  }
});

test("a host killed with SIGKILL leaves its ports to the others at once; a closed pool's ports are free", async () => {
  const host = spawn(process.execPath, [...TS_NODE, '-e', `
    const { PortPool } = await import(${JSON.stringify(new URL('./ports.ts', import.meta.url).href)});
    const pool = new PortPool([29570, 29572], 60_000);
    console.log([await pool.allocate(), await pool.allocate(), await pool.allocate()].join(' '));
    setInterval(() => {}, 1000);
  `], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(createInterface({ input: host.stdout! }), 'line')) as [string];
  assert.equal(line, '29570 29571 29572');
  const pool = new PortPool([29570, 29572], 60_000);
  try {
    await assert.rejects(pool.allocate(), /no free port in 29570-29572/);
    host.kill('SIGKILL');
    await once(host, 'exit');
    assert.equal(await pool.allocate(), 29570);
  } finally {
    pool.close();
  }
  const next = new PortPool([29570, 29570], 60_000);
  assert.equal(await next.allocate(), 29570);
  next.close();
});
