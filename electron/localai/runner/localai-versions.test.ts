// The version `hangar localai install|upgrade VERSION` takes: vX.Y.Z (or X.Y.Z), or `latest` for the release the source
// says is the latest; anything else is typed wrong (exit 2) and the line names what was typed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hangar } from '../../agent/test-agent.ts';
import { localAiStand, type LocalAiStand } from '../testing/localai-stand.ts';

describe('a LocalAI version as typed', () => {
  let stand: LocalAiStand;

  before(async () => {
    stand = await localAiStand('localai-versions', '24660-24679');
    await stand.releases.publish({ version: 'v3.2.0' });
    await stand.releases.publish({ version: 'v3.3.0' });
  });

  after(async () => {
    await stand?.close();
  });

  test('a version that is none is refused naming it, before anything is fetched', async () => {
    for (const command of ['install', 'upgrade']) {
      for (const typed of ['3.3', 'V3.3.0', 'v3.3.0 ', '../../../etc/passwd', '']) {
        const refused = await hangar(stand.agent, 'localai', command, typed);
        assert.deepEqual([refused.code, refused.stderr], [2, `hangar: version must look like v3.1.0 or be latest, got ${JSON.stringify(typed)}\n`], `${command} ${JSON.stringify(typed)}`);
      }
    }
    assert.deepEqual(stand.releases.asked, []);
  });

  test('latest is the release the source says is the latest', async () => {
    const installed = await stand.ok('localai', 'install', 'latest');
    assert.match(installed.stdout, /^LocalAI v3\.3\.0 installed \(sha256 [0-9a-f]{12}… checked\)/);
    const again = await stand.ok('localai', 'upgrade', 'latest');
    assert.match(again.stdout, /^LocalAI v3\.3\.0 is already installed\n$/);
  });
});
