// The bucket a viewer makes when the cluster's store has none yet; kept apart from store-limits.ts, which is data that
// commands without a NATS connection read (nats-config's permissions), so that they load no NATS client.
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { BucketName } from '../subjects.ts';
import { bucketStreamConfig } from './store-limits.ts';

/** Makes a bucket with these limits unless it is there; one that is there is taken as it is. */
export async function makeBucket(nc: NatsConnection, name: BucketName): Promise<void> {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const config = bucketStreamConfig(name);
  await jsm.streams.info(config.name).catch(async (error: unknown) => {
    if (!(error instanceof Error && /stream not found/i.test(error.message))) throw error;
    await jsm.streams.add(config);
  });
}
