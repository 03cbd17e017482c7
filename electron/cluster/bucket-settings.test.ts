// A bucket someone else made first, with settings that would let one value erase the rest: no host uses it, and each
// says why and what to do.
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import { bucketStreamConfig } from './store/store-limits.ts';
import { BUCKETS } from './subjects.ts';
import { startNats, type NatsServer } from './test-nats.ts';

let root: string;
let nats: NatsServer;
let agent: Agent | undefined;

before(async () => {
  root = await tempDir('bucket-settings');
  nats = await startNats();
});

after(async () => {
  agent?.child.kill('SIGKILL');
  await nats.stop();
  await rm(root, { recursive: true, force: true });
});

test('a desired bucket made first with rollups and purges allowed is not used: the store says so, naming the way out', async () => {
  const nc = await connect({ servers: nats.url });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ ...bucketStreamConfig(BUCKETS.desired), allow_rollup_hdrs: true, deny_purge: false });
  } finally {
    await nc.close();
  }
  const gallery = join(root, 'index.yaml');
  await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
  agent = await startAgent(join(root, 'home'), gallery, ['--cluster', nats.url, '--name', 'n1', '--ports', '23800-23809', '--heartbeat', '300']);
  const store = await until('the store refused', async () => {
    const { store } = await read(agent!, 'clusterStatus');
    return store.available ? undefined : store;
  }, 10_000);
  assert.match(store.reason ?? '', /hangar-desired bucket was not made as Hangar makes it \(it allows rollup headers; it allows purges\): delete stream KV_hangar-desired/);
});
