// One long note must not fail a whole remote listing: a node whose backend directories all carry one alias (LocalAI's
// alias group of thousands) answers `ls --on` through another host, its alias row's note bounded where it is made.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BackendView } from '../../shared/types.ts';
import { hangar, read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import { tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { buildMetadata, writeLocalAiDir } from '../core/testing/localai-layout.ts';
import { trustingHomes } from './test-cluster.ts';
import { startNats, type NatsServer } from './test-nats.ts';

/** Enough builds that naming them all in one note goes past a reply's 16 KiB limit on a text. */
const BUILDS = 2600;

describe(`a node whose ${BUILDS.toLocaleString('en-US')} backend directories share one alias answers ls through another host`, () => {
  let root: string;
  let nats: NatsServer;
  const agents: Agent[] = [];

  before(async () => {
    root = await tempDir('alias-note-reply');
    const backends = join(root, 'n2', 'backends');
    await mkdir(backends, { recursive: true });
    for (let i = 1; i <= BUILDS; i++) await writeLocalAiDir(backends, `b${i}`, { runSh: 'script', metadata: buildMetadata(`b${i}`, { alias: 'echo-auto' }) });
    const gallery = join(root, 'empty.yaml');
    await writeGallery(gallery, []);
    await trustingHomes([join(root, 'n2'), join(root, 'viewer')]);
    nats = await startNats();
    const args = (name: string, ports: string) => ['--cluster', nats.url, '--name', name, '--ports', ports, '--heartbeat', '500'];
    agents.push(await startAgent(join(root, 'n2'), gallery, args('n2', '23770-23779')));
    agents.push(await startAgent(join(root, 'viewer'), gallery, args('viewer', '23780-23789')));
  });
  after(async () => {
    for (const agent of agents) {
      agent.child.kill('SIGTERM');
      await once(agent.child, 'exit');
    }
    await nats?.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('every row arrives, and the alias row says "b1 and 2,599 others"', async () => {
    const viewer = agents[1]!;
    await until('n2 online', async () => (await read(viewer, 'nodes')).find((c) => c.name === 'n2' && c.status === 'online'), 10_000);
    const listed = await hangar(viewer, 'ls', '--on', 'n2', '--json');
    assert.equal(listed.code, 0, listed.stderr);
    const rows = JSON.parse(listed.stdout) as BackendView[];
    assert.equal(rows.filter((r) => /^b\d+$/.test(r.name)).length, BUILDS);
    const alias = rows.find((r) => r.name === 'echo-auto');
    assert.match(alias?.localai.join('\n') ?? '', /echo-auto is the alias of b1 and 2,599 others, and LocalAI prefers b\d+ on this machine/);
  });
});
