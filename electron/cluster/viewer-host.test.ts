// A viewer-only host, on a real cluster: it is no node to cordon or drain, and what it lists across nodes fails
// (exit 1) when no node answers it, as when the cluster's server is down.
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { tempDir } from '../core/testing/fixtures.ts';
import { hangar, read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import { trustingHomes } from './test-cluster.ts';
import { startNats, type NatsServer } from './test-nats.ts';

describe('a viewer-only host', () => {
  let root: string;
  let nats: NatsServer;
  const agents: Record<string, Agent> = {};

  before(async () => {
    root = await tempDir('viewer-host');
    nats = await startNats();
    await trustingHomes(['gpu', 'desk'].map((h) => join(root, h)));
    const common = ['--cluster', nats.url, '--heartbeat', '300'];
    agents.gpu = await startAgent(join(root, 'gpu'), null, [...common, '--name', 'gpu', '--ports', '26320-26329']);
    agents.desk = await startAgent(join(root, 'desk'), null, [...common, '--name', 'desk', '--cluster-role', 'viewer']);
    await until('gpu online on desk', async () => ((await read(agents.desk!, 'nodes')).some((c) => c.name === 'gpu' && c.status === 'online') ? true : undefined), 5000);
  });

  after(async () => {
    for (const agent of Object.values(agents)) agent.child.kill('SIGKILL');
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('is neither cordoned, uncordoned nor drained', async () => {
    for (const [command, what] of [['cordon', 'cordoned'], ['uncordon', 'uncordoned'], ['drain', 'drained']] as const) {
      const refused = await hangar(agents.desk!, command, '--on', 'desk', ...(command === 'drain' ? ['--yes'] : []));
      assert.equal(refused.code, 4, `${command}: ${refused.stdout}${refused.stderr}`);
      assert.equal(refused.stderr, `hangar: desk joined the cluster as a viewer only (--cluster-role viewer): it runs no backend for the cluster, so it is not ${what}\n`);
    }
    assert.equal((await read(agents.desk!, 'nodes')).find((c) => c.self)?.cordoned, false);
  });

  test('lists across nodes exit 1 when no node answers, the server being down', async () => {
    assert.equal((await hangar(agents.desk!, 'ls', '--on', 'all')).code, 0);
    await nats.stop();
    for (const command of ['ls', 'ps', 'resources']) {
      const listed = await hangar(agents.desk!, command, '--on', 'all');
      assert.equal(listed.code, 1, `${command}: ${listed.stdout}${listed.stderr}`);
      assert.match(listed.stdout, /^gpu \([0-9a-f]{16}\): /m, command);
    }
  });
});
