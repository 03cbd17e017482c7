// Replies larger than NATS's max_payload: a node with 5,000 installed backends (written straight into its backends
// directory, as the store reads them) answers `ls --on` and `gallery --on` through another host, on a real
// nats-server at its default 1 MiB limit and at limits small enough that the reply goes in parts, or cannot go at
// all and comes back as an error. The node never crashes.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { after, before, describe, test } from 'node:test';
import type { BackendView, GalleryEntryView } from '../../shared/types.ts';
import { installedBackends, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { hangar, json, read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import { MAX_PARTS } from './payload.ts';
import { trustingHomes } from './test-cluster.ts';
import { startNats, type NatsServer } from './test-nats.ts';

const BACKENDS = 5000;

describe(`a node with ${BACKENDS} backends answers through another host`, () => {
  let root: string;
  let bigGallery: string;
  let smallGallery: string;
  let nats: NatsServer | undefined;
  let big: Agent | undefined;
  let viewer: Agent | undefined;
  let bigId: string;

  /** The two agents on a fresh nats-server whose max_payload is `maxPayload` bytes. */
  async function cluster(maxPayload: number): Promise<{ nats: NatsServer; big: Agent; viewer: Agent }> {
    await stop();
    const config = join(root, `nats-${maxPayload}.conf`);
    await writeFile(config, `max_payload: ${maxPayload}\n`);
    nats = await startNats(['-c', config]);
    const args = (name: string, ports: string) => ['--cluster', nats!.url, '--name', name, '--ports', ports, '--heartbeat', '500'];
    big = await startAgent(join(root, 'big'), bigGallery, args('big', '23700-23709'));
    viewer = await startAgent(join(root, 'viewer'), smallGallery, args('viewer', '23710-23719'));
    const card = await until('big online', async () => (await read(viewer!, 'nodes')).find((c) => c.name === 'big' && c.status === 'online'), 5000);
    bigId = card.id;
    return { nats, big, viewer };
  }

  async function stop(): Promise<void> {
    for (const agent of [big, viewer]) {
      if (!agent || agent.child.exitCode !== null) continue;
      agent.child.kill('SIGTERM');
      await once(agent.child, 'exit');
    }
    await nats?.stop();
  }

  before(async () => {
    root = await tempDir('large-reply');
    bigGallery = await installedBackends(root, join(root, 'big'), BACKENDS);
    smallGallery = join(root, 'small.yaml');
    await writeGallery(smallGallery, []);
    await trustingHomes([join(root, 'big'), join(root, 'viewer')]);
  });

  after(async () => {
    await stop();
    await rm(root, { recursive: true, force: true });
  });

  test('at the default 1 MiB max_payload, `ls --on` and `gallery --on` bring every backend', async () => {
    const { big } = await cluster(1024 * 1024);
    const listed = await hangar(viewer!, 'ls', '--on', 'big', '--json');
    assert.equal(listed.code, 0, listed.stderr);
    const backends = JSON.parse(listed.stdout) as Array<{ name: string }>;
    assert.equal(backends.length, BACKENDS);
    const raw = await json<BackendView[]>(big, 'ls');
    assert.ok(JSON.stringify(raw).length > 1024 * 1024, `the reply (${JSON.stringify(raw).length} B) is over max_payload`);
    const gallery = await json<GalleryEntryView[]>(viewer!, 'gallery', '--on', 'big');
    assert.equal(gallery.length, BACKENDS);
    assert.equal(gallery.filter((e) => e.upgradable).length, BACKENDS / 2);
    assert.equal(big.child.exitCode, null, 'the node is still running');
  });

  test('at a 64 KiB max_payload the reply comes in signed parts and arrives whole', async () => {
    const { nats, big } = await cluster(64 * 1024);
    const watcher = await connect({ servers: nats.url.replace('nats://', '') });
    const parts = new Set<string>();
    watcher.subscribe('_INBOX.>', {
      callback: (_e, m) => {
        parts.add(m.headers?.get('Hangar-Part') ?? '');
      },
    });
    await watcher.flush();
    try {
      assert.equal((await json<BackendView[]>(viewer!, 'ls', '--on', 'big')).length, BACKENDS);
      const counts = [...parts].map((p) => Number(p.split('/')[1]));
      assert.ok(counts.some((n) => n > 1), `the reply went in parts (${[...parts].join(' ')})`);
    } finally {
      await watcher.close();
    }
    assert.equal(big.child.exitCode, null);
  });

  test(`a reply that needs more than ${MAX_PARTS} messages comes back as a clear error, and the node serves on`, async () => {
    const { big } = await cluster(4096);
    const listed = await hangar(viewer!, 'ls', '--on', 'big');
    assert.equal(listed.code, 1);
    assert.match(listed.stderr, new RegExp(`^hangar: the reply is \\d+\\.\\d MiB: more than ${MAX_PARTS} messages of this cluster's max_payload \\(4\\.0 KiB\\) can carry\\n$`));
    assert.equal(big.child.exitCode, null, 'the node is still running');
    assert.deepEqual(await json(viewer!, 'ps', '--on', bigId), [], 'and answers the next call');
    const status = await read(big, 'clusterStatus');
    assert.equal(status.unsent['reply too large'], 1);
  });
});
