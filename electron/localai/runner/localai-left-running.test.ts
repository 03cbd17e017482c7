// An agent killed (kill -9) while the LocalAI it runs serves: the next agent on the home stops that LocalAI (no longer
// anyone's child, its output going nowhere) and starts its own again with the models it had loaded, as Hangar's own
// models are started again after a host dies; it never claims a link to the one it stops.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { until } from '../../agent/test-agent.ts';
import { alive, localAiStand, type LocalAiStand } from '../testing/localai-stand.ts';

describe('an agent killed while LocalAI runs', () => {
  let stand: LocalAiStand;

  before(async () => {
    stand = await localAiStand('localai-left', '24600-24619');
    await stand.releases.publish({ version: 'v3.2.0' });
    await stand.ok('localai', 'install');
  });

  after(async () => {
    await stand?.close();
  });

  test('the next agent starts its own LocalAI again, its models loaded, and never says it linked the one it stops', async () => {
    await stand.ok('localai', 'start');
    const left = await stand.status();
    assert.equal((await stand.call(left, '/backend/load', { model: 'm1' })).status, 200);
    stand.agent.child.kill('SIGKILL');
    await new Promise((resolve) => stand.agent.child.once('exit', resolve));
    assert.ok(alive(left.pid!), 'LocalAI outlives a killed agent');

    await stand.restart();
    assert.ok(!alive(left.pid!), 'the next agent stopped it before serving');
    const again = await stand.ready(left.pid);
    await until('m1 loaded again', async () => ((await stand.loaded(again)).includes('m1') ? true : undefined), 20_000);
    assert.deepEqual(await stand.loaded(again), ['m1']);
    const said = stand.stderr();
    assert.match(said, new RegExp(`hangar: stopped the LocalAI \\(pid ${left.pid}\\) a previous agent left running[^\\n]*; starting it again, with m1\\n`));
    const stopped = said.indexOf(`stopped the LocalAI (pid ${left.pid})`);
    const linked = said.search(/LocalAI server \S+: linked/);
    assert.ok(linked === -1 || linked > stopped, `no link is claimed before the LocalAI left running is stopped:\n${said}`);
    assert.match(said, /LocalAI ready on http:\/\/127\.0\.0\.1:\d+ \(pid \d+\)/);

    // Stopped on purpose, it stays stopped with the next agent (localai-autostart is off).
    await stand.ok('localai', 'stop');
    stand.agent.child.kill('SIGTERM');
    await new Promise((resolve) => stand.agent.child.once('exit', resolve));
    await stand.restart();
    assert.equal((await stand.status()).state, 'stopped');
  });
});
