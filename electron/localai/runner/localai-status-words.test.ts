// What `hangar localai` says in its result and status lines: a downgrade called one, an install named as the install
// it was, the end of a broken build not told as the running one's crash, a crash loop with the command that gets out
// of it; and a setting typed wrong named.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hangar, startCli, until } from '../../agent/test-agent.ts';
import { localAiStand, type LocalAiStand } from '../testing/localai-stand.ts';

describe("localai's result and status lines", () => {
  let stand: LocalAiStand;

  before(async () => {
    stand = await localAiStand('localai-words', '24700-24719');
    await stand.releases.publish({ version: 'v3.2.0' });
    await stand.releases.publish({ version: 'v3.3.0' });
  });

  after(async () => {
    await stand?.close();
  });

  test('an install of the installed version is said as an install', async () => {
    await stand.ok('localai', 'install', 'v3.2.0');
    const again = await stand.ok('localai', 'install', 'v3.2.0');
    assert.equal(again.stdout, 'LocalAI v3.2.0 is already installed\n');
    assert.match((await stand.ok('localai', 'status')).stdout, /\nlast install: done: LocalAI v3\.2\.0 is already installed\n/);
  });

  test('an upgrade to an older version says it is a downgrade', async () => {
    await stand.ok('localai', 'start');
    assert.match((await stand.ok('localai', 'upgrade', 'v3.3.0')).stdout, /^LocalAI v3\.2\.0 → v3\.3\.0(;|\n)/);
    const down = await stand.ok('localai', 'upgrade', 'v3.2.0');
    assert.match(down.stdout, /^LocalAI v3\.3\.0 → v3\.2\.0 \(a downgrade\)(;|\n)/);
    assert.match((await stand.ok('localai', 'status')).stdout, /\nlast upgrade: done: LocalAI v3\.3\.0 → v3\.2\.0 \(a downgrade\)/);
  });

  test("a broken build's end in a rolled-back upgrade is not told as the running LocalAI's", async () => {
    await stand.releases.publish({ version: 'v3.4.0', failStart: 'stand-in: this build is broken (bad instruction)' });
    const failed = await hangar(stand.agent, 'localai', 'upgrade', 'v3.4.0');
    assert.equal(failed.code, 1, failed.stderr);
    const view = await stand.status();
    assert.deepEqual([view.state, view.version, view.restarts, view.lastExit], ['ready', 'v3.2.0', 0, null]);
    assert.doesNotMatch((await stand.ok('localai', 'status')).stdout, /restarts after a crash/);
  });

  test('a crash loop says how to start LocalAI again', async () => {
    let pid = (await stand.status()).pid!;
    for (;;) {
      process.kill(pid, 'SIGKILL');
      const next = await until('LocalAI restarted or left stopped', async () => {
        const view = await stand.status();
        return view.state === 'crash-looping' || (view.state === 'ready' && view.pid !== pid) ? view : undefined;
      }, 30_000);
      if (next.state === 'crash-looping') break;
      pid = next.pid!;
    }
    const status = (await stand.ok('localai', 'status')).stdout;
    assert.match(status, /^LocalAI: crash-looping, v3\.2\.0\n/);
    assert.match(status, /\nstart it again: hangar localai start\n/);
    assert.match(stand.stderr(), /LocalAI ended 5 times in a row soon after its start: left stopped \(crash-looping\); hangar localai start starts it again\n/);
    await stand.ok('localai', 'start');
  });

  test('a setting typed wrong is named', async () => {
    const wrong = await hangar(stand.agent, 'settings', 'localai-autostart', 'maybe');
    assert.deepEqual([wrong.code, wrong.stderr], [2, 'hangar: localai-autostart wants on or off, got "maybe"\n']);
  });

  test('an upgrade under way is said with where it is', async () => {
    await stand.releases.publish({ version: 'v3.5.0' });
    stand.releases.hold('v3.5.0');
    const upgrade = startCli(stand.agent, 'localai', 'upgrade', 'v3.5.0');
    await until('the download stalled', () => (stand.releases.stalledDownloads() === 1 ? true : undefined), 20_000);
    assert.match((await stand.ok('localai', 'status')).stdout, /\nlast upgrade: running \(downloading LocalAI v3\.5\.0: 50%\)\n/);
    await stand.ok('localai', 'cancel');
    await upgrade.exited;
    stand.releases.letGo();
  });

  test('a LocalAI that starts is not said linked by the link made with the one before it', async () => {
    const before = await stand.status();
    assert.match(before.link ?? '', /^linked as the LocalAI server/);
    await stand.releases.publish({ version: 'v3.6.0', readyAfterMs: 3000 });
    const upgrade = startCli(stand.agent, 'localai', 'upgrade', 'v3.6.0');
    const starting = await until('the new build starting', async () => {
      const view = await stand.status();
      return view.state === 'starting' && view.pid !== null && view.pid !== before.pid ? view : undefined;
    }, 20_000);
    assert.equal(starting.link, null);
    assert.equal((await upgrade.exited).code, 0, upgrade.stderr());
    assert.match((await stand.status()).link ?? '', new RegExp(`^linked as the LocalAI server beside this node \\(pid ${(await stand.status()).pid}\\)`));
  });
});
