// A LocalAI install, upgrade or rollback under way, as a user meets it from a second terminal and with Ctrl-C: anything
// else asked of LocalAI is refused at once saying what runs (exit 4, as for a backend's job), never left waiting in
// silence; Ctrl-C cancels it while it downloads (LocalAI runs on as it was), says it goes on once its swap began, and a
// second Ctrl-C leaves it running, naming the commands that follow and cancel it.
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { hangar, startCli, until } from '../../agent/test-agent.ts';
import { localAiStand, type LocalAiStand } from '../testing/localai-stand.ts';

describe('a LocalAI upgrade under way', () => {
  let stand: LocalAiStand;
  const stalled = () => until('the download stalled', () => (stand.releases.stalledDownloads() === 1 ? true : undefined), 20_000);
  const files = async () => (await readdir(join(stand.home, 'localai'))).filter((n) => n.startsWith('local-ai-')).sort();

  before(async () => {
    stand = await localAiStand('localai-busy', '24680-24699');
    await stand.releases.publish({ version: 'v3.2.0' });
    await stand.ok('localai', 'install');
    await stand.ok('localai', 'start');
    assert.equal((await stand.call(await stand.status(), '/backend/load', { model: 'm1' })).status, 200);
  });

  after(async () => {
    stand?.releases.letGo();
    await stand?.close();
  });

  test('anything else asked of LocalAI meanwhile is refused at once, saying what runs and how to follow it', async () => {
    await stand.releases.publish({ version: 'v3.3.0' });
    stand.releases.hold('v3.3.0');
    const running = await stand.status();
    const upgrade = startCli(stand.agent, 'localai', 'upgrade');
    await stalled();
    for (const args of [['stop'], ['start'], ['restart'], ['upgrade'], ['install', 'v3.3.0'], ['rollback']]) {
      const asked = Date.now();
      const refused = await hangar(stand.agent, 'localai', ...args);
      assert.equal(refused.code, 4, `${args.join(' ')}: ${refused.stderr}`);
      assert.match(refused.stderr, /^hangar: a LocalAI upgrade is under way \(downloading LocalAI v3\.3\.0: \d+%\): hangar localai status follows it, hangar localai cancel cancels it\n$/);
      assert.ok(Date.now() - asked < 10_000, `${args.join(' ')} answered at once`);
    }
    assert.equal((await stand.status()).pid, running.pid, 'LocalAI was left running');
    stand.releases.letGo();
    const done = await upgrade.exited;
    assert.equal(done.code, 0, upgrade.stderr());
    assert.match(done.stdout, /^LocalAI v3\.2\.0 → v3\.3\.0; models loaded again: m1\n$/);
  });

  test('Ctrl-C cancels an upgrade that is still downloading: LocalAI runs on as it was, nothing is left', async () => {
    await stand.releases.publish({ version: 'v3.4.0' });
    stand.releases.hold('v3.4.0');
    const running = await stand.status();
    const upgrade = startCli(stand.agent, 'localai', 'upgrade', 'v3.4.0');
    await stalled();
    upgrade.interrupt();
    const ended = await upgrade.exited;
    assert.equal(ended.code, 130, upgrade.stderr());
    assert.equal(upgrade.stderr(), 'hangar: cancelling the LocalAI upgrade… (Ctrl-C again leaves it running)\nhangar: cancelled the LocalAI upgrade to v3.4.0: LocalAI v3.3.0 runs as it was\n');
    const after = await stand.status();
    assert.deepEqual([after.state, after.version, after.pid, after.operation?.state], ['ready', 'v3.3.0', running.pid, 'cancelled']);
    assert.deepEqual(await files(), ['local-ai-v3.2.0', 'local-ai-v3.3.0'], 'no part of the download is left');
    assert.match((await stand.ok('localai', 'status')).stdout, /\nlast upgrade: cancelled the LocalAI upgrade to v3\.4\.0: LocalAI v3\.3\.0 runs as it was\n/);

    // From another terminal, `hangar localai cancel` does the same; the command that ran the upgrade says so.
    const again = startCli(stand.agent, 'localai', 'upgrade', 'v3.4.0');
    await stalled();
    const cancel = await stand.ok('localai', 'cancel');
    assert.equal(cancel.stdout, 'cancelled the LocalAI upgrade to v3.4.0: LocalAI v3.3.0 runs as it was\n');
    assert.equal((await again.exited).code, 1);
    assert.equal(again.stderr(), 'hangar: cancelled the LocalAI upgrade to v3.4.0: LocalAI v3.3.0 runs as it was\n');
    const nothing = await hangar(stand.agent, 'localai', 'cancel');
    assert.deepEqual([nothing.code, nothing.stderr], [4, 'hangar: no LocalAI install, upgrade or rollback is under way: nothing to cancel\n']);
    stand.releases.letGo();
  });

  test('past its swap, Ctrl-C says it goes on; a second Ctrl-C leaves it running and says how to follow it', async () => {
    await stand.releases.publish({ version: 'v3.5.0', readyAfterMs: 8000 });
    const running = await stand.status();
    const upgrade = startCli(stand.agent, 'localai', 'upgrade', 'v3.5.0');
    await until('the new build starting', async () => ((await stand.status()).operation?.phase === 'starting LocalAI' ? true : undefined), 20_000);
    upgrade.interrupt();
    await until('Ctrl-C answered', () => (upgrade.stderr().includes('it goes on') ? true : undefined), 10_000);
    upgrade.interrupt();
    const ended = await upgrade.exited;
    assert.equal(ended.code, 130);
    assert.equal(
      upgrade.stderr(),
      'hangar: cancelling the LocalAI upgrade… (Ctrl-C again leaves it running)\n' +
        'hangar: the LocalAI upgrade is past the point where it can be cancelled (starting LocalAI); it goes on\n' +
        'hangar: left the LocalAI upgrade running: `hangar localai status` follows it, `hangar localai cancel` cancels it\n',
    );
    const upgraded = await until('the upgrade done', async () => {
      const view = await stand.status();
      return view.operation?.state === 'done' ? view : undefined;
    }, 30_000);
    assert.deepEqual([upgraded.state, upgraded.version], ['ready', 'v3.5.0']);
    assert.notEqual(upgraded.pid, running.pid);
    assert.deepEqual(await stand.loaded(upgraded), ['m1']);
  });
});
