// How `hangar localai install` says no, by the README's exit statuses: a release whose checksum is wrong, unlisted or
// missing is bad (6), a version LocalAI never released is not there (3), a release source that cannot be reached is a
// failure to reach it (1), never "refused"; and the line that says so keeps its conclusion whole.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { LocalAiRunView } from '../../../shared/types.ts';
import { hangar, json, startAgent } from '../../agent/test-agent.ts';
import { tempDir } from '../../core/testing/fixtures.ts';
import { localAiStand, type LocalAiStand } from '../testing/localai-stand.ts';
import { releasePlatform } from './release.ts';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';

describe('localai install says no', () => {
  let stand: LocalAiStand;

  before(async () => {
    stand = await localAiStand('localai-refusals', '24640-24659');
  });

  after(async () => {
    await stand?.close();
  });

  test('a wrong checksum exits 6, and its line keeps "nothing was installed"; status --json has it whole', async () => {
    await stand.releases.publish({ version: 'v3.0.0' }, 'wrong');
    const wrong = await hangar(stand.agent, 'localai', 'install', 'v3.0.0');
    assert.equal(wrong.code, 6, wrong.stderr);
    assert.match(wrong.stderr, /^hangar: refused LocalAI v3\.0\.0: its sha256 is not the one its checksums file lists; nothing was installed \(local-ai-v3\.0\.0-\S+ has [0-9a-f]{16}…, LocalAI-v3\.0\.0-checksums\.txt lists [0-9a-f]{16}…\)\n$/);
    const operation = (await json<LocalAiRunView>(stand.agent, 'localai', 'status')).operation!;
    assert.match(operation.message!, /nothing was installed \(local-ai-v3\.0\.0-\S+ has sha256 [0-9a-f]{64}; http:\/\/\S+\/LocalAI-v3\.0\.0-checksums\.txt lists [0-9a-f]{64}\)$/);
  });

  test('an unlisted checksum and a missing checksums file exit 6', async () => {
    await stand.releases.publish({ version: 'v3.0.1' }, 'unlisted');
    await stand.releases.publish({ version: 'v3.0.2' }, 'no-file');
    const unlisted = await hangar(stand.agent, 'localai', 'install', 'v3.0.1');
    assert.equal(unlisted.code, 6, unlisted.stderr);
    assert.match(unlisted.stderr, /^hangar: refused LocalAI v3\.0\.1: its checksums file lists no sha256 for local-ai-v3\.0\.1-\S+; nothing was installed \(Hangar never installs a binary it cannot check\)\n$/);
    const missing = await hangar(stand.agent, 'localai', 'install', 'v3.0.2');
    assert.equal(missing.code, 6, missing.stderr);
    assert.match(missing.stderr, /^hangar: refused LocalAI v3\.0\.2: its checksums file \S+\/LocalAI-v3\.0\.2-checksums\.txt answered 404; nothing was installed \(Hangar never installs a binary it cannot check\)\n$/);
    assert.ok(!stand.releases.asked.some((p) => p.endsWith(`local-ai-v3.0.2-${releasePlatform()}`)), 'the binary of a release without checksums is not downloaded');
  });

  test('a version LocalAI never released exits 3 and says so', async () => {
    const none = await hangar(stand.agent, 'localai', 'install', 'v9.9.9');
    assert.equal(none.code, 3, none.stderr);
    assert.equal(none.stderr, `hangar: there is no LocalAI release v9.9.9 at ${stand.releases.url}/mudler/LocalAI/releases; nothing was installed\n`);
  });

  test('a refused release is listed with why until a download of it passes the checks', async () => {
    await stand.releases.publish({ version: 'v3.0.3' }, 'wrong');
    assert.equal((await hangar(stand.agent, 'localai', 'install', 'v3.0.3')).code, 6);
    const refused = (await stand.status()).refused;
    assert.deepEqual(refused.map((r) => r.version), ['v3.0.0', 'v3.0.1', 'v3.0.2', 'v3.0.3'], 'each refused release, and no release that does not exist');
    assert.match(refused.at(-1)!.reason, /^its sha256 is not the one its checksums file lists; nothing was installed \(local-ai-v3\.0\.3-\S+ has [0-9a-f]{16}…/);
    await stand.releases.publish({ version: 'v3.0.3' });
    await stand.ok('localai', 'install', 'v3.0.3');
    assert.deepEqual((await stand.status()).refused.map((r) => r.version), ['v3.0.0', 'v3.0.1', 'v3.0.2']);
  });

  test('a release source where nothing listens is a failure to reach it (exit 1), not a refused release', async () => {
    const closed = createServer().listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = (closed.address() as { port: number }).port;
    closed.close();
    const root = await tempDir('localai-down');
    const agent = await startAgent(join(root, 'home'), null, ['--localai-releases', `http://127.0.0.1:${port}`]);
    try {
      for (const args of [['install', 'v3.2.0'], ['install']]) {
        const down = await hangar(agent, 'localai', ...args);
        assert.equal(down.code, 1, down.stderr);
        assert.equal(down.stderr, `hangar: cannot reach LocalAI's releases at http://127.0.0.1:${port}: nothing listens at 127.0.0.1:${port} (connection refused); nothing was installed\n`);
      }
    } finally {
      agent.child.kill('SIGTERM');
      await once(agent.child, 'exit');
      await rm(root, { recursive: true, force: true });
    }
  });
});
