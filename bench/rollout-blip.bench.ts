// rollout_blip_ms: a rolling upgrade of two nodes (a model loaded on each, the default heartbeat) with nats-server
// stopped for 8 s while the second node's step is under way, against the same rollout with no outage, in alternate
// rounds: the time the outage adds past its own 8 s. The goal: at most 2 heartbeats, and the rollout ends done with
// every node upgraded, as if there had been none.
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { connect } from '../electron/agent/connect.ts';
import { startAgent, type Agent } from '../electron/agent/test-agent.ts';
import { DEFAULT_HEARTBEAT_MS } from '../electron/cluster/defaults.ts';
import { trustingHomes } from '../electron/cluster/test-cluster.ts';
import { startNats, type NatsServer } from '../electron/cluster/test-nats.ts';
import { echoSource, tempDir, writeGallery } from '../electron/core/testing/fixtures.ts';
import type { NodeCard, RolloutView } from '../shared/types.ts';
import type { WireClient } from '../shared/wire-client.ts';
import { median, type BenchFigure } from './figure.ts';

const ROUNDS = 5;
const OUTAGE_MS = 8000;

export default async function (): Promise<BenchFigure[]> {
  const root = await tempDir('bench-blip');
  let nats: NatsServer = await startNats();
  const homes = [0, 1].map((i) => join(root, `home-${i}`));
  await trustingHomes(homes);
  const galleries = homes.map((home) => `${home}.yaml`);
  // Every version starts its server a second late: the step is still under way when the broker goes.
  const versions = Array.from({ length: 1 + 2 * ROUNDS }, (_, i) => `1.0.${i}`);
  const sources = await Promise.all(versions.map(async (version) => {
    const dir = await echoSource(root, version);
    await writeFile(join(dir, 'run.sh'), (await readFile(join(dir, 'run.sh'), 'utf8')).replace(/^exec /m, 'sleep 1\nexec '));
    return dir;
  }));
  let published = 0;
  const publish = (i: number) => Promise.all(galleries.map((g) => writeGallery(g, [{ name: 'echo', uri: sources[i]!, version: versions[i]! }])));
  await publish(0);
  const agents: Agent[] = [];
  for (const [i, home] of homes.entries()) agents.push(await startAgent(home, galleries[i]!, ['--cluster', nats.url, '--name', `b${i}`, '--ports', `${27800 + 50 * i}-${27849 + 50 * i}`]));
  const client = await connect({ node: agents[0]!.url, home: agents[0]!.home });
  try {
    const cards = await online(client, 2);
    // The broker goes while the other node's step is under way: that step's calls cross it.
    const remote = cards.find((c) => !c.self)!.id;
    for (const card of cards) {
      const node = card.self ? 'local' : card.id;
      await client.waitJob({ node, id: (await client.install({ node, name: 'echo' })).id });
      await client.load({ node, backend: 'echo', model: 'm1' });
    }
    const quiet: number[] = [];
    const blipped: number[] = [];
    const roll = async (outage: boolean) => {
      await publish(++published);
      await until(async () => (await client.backends({ node: 'local' }))[0]?.upgradable === true);
      const start = performance.now();
      const started = await client.rollout({ node: 'local', name: 'echo', on: 'all' });
      if (outage) {
        await until(async () => (await rolloutOf(client, started.id))?.nodes.find((n) => n.id === remote)?.step === 'upgrading');
        const port = Number(new URL(nats.url).port);
        await nats.stop({ keepStore: true });
        await delay(OUTAGE_MS);
        nats = await startNats([], port, nats.storeDir!);
      }
      const finished = await until(async () => {
        const r = await rolloutOf(client, started.id);
        return r?.finishedAt ? r : undefined;
      });
      (outage ? blipped : quiet).push(performance.now() - start);
      if (finished.state !== 'done' || finished.nodes.some((n) => n.step !== 'upgraded')) throw new Error(`the rollout across the outage: ${JSON.stringify(finished)}`);
      await online(client, 2);
    };
    for (let round = 0; round < ROUNDS; round++) {
      await roll(round % 2 === 1);
      await roll(round % 2 === 0);
    }
    const added = median(blipped) - median(quiet) - OUTAGE_MS;
    return [{
      name: 'rollout_blip_ms',
      value: added,
      unit: 'ms',
      goal: 2 * DEFAULT_HEARTBEAT_MS,
      note: `a rollout of 2 nodes across an ${OUTAGE_MS / 1000} s nats-server outage ${median(blipped).toFixed(0)} ms vs ${median(quiet).toFixed(0)} ms with none: ${added.toFixed(0)} ms past the outage (goal 2 heartbeats), every node upgraded and the rollout done; medians of ${ROUNDS}, alternating`,
    }];
  } finally {
    client.close();
    for (const agent of agents) agent.child.kill('SIGKILL');
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  }
}

async function online(client: WireClient, count: number): Promise<NodeCard[]> {
  return until(async () => {
    const cards = (await client.nodes({ node: 'local' })).filter((c) => c.status === 'online');
    return cards.length >= count ? cards : undefined;
  });
}

async function rolloutOf(client: WireClient, id: string): Promise<RolloutView | undefined> {
  return (await client.rollouts({ node: 'local' }).catch(() => [])).find((r) => r.id === id);
}

/** What `probe` gives once it is truthy, asked every 20 ms for up to 60 s. */
async function until<T>(probe: () => Promise<T | undefined | false>): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('bench: waited 60 s');
    await delay(20);
  }
}
