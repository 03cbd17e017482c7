// The cluster's memory, with real agents on a real nats-server with JetStream:
// - converge_ratio / converge_ms: a node started again while the cluster wants another version of its backend (a
//   model loaded, restored at start), from its return (its first card heard by a viewer) until it runs that version,
//   against the same upgrade run by hand on it: started again with that version on offer and told to upgrade the
//   moment it returns, return to job done; the detection time (return to the convergence job's start) is said apart,
//   and the ratio is of the rest;
// - rollout_resume_ms: a rollout's coordinator SIGKILLed after its first node, until another viewer is told it is
//   interrupted, at the default 2 s heartbeat;
// - presence_bytes_per_node_s_20 / _1000: what a node's presence costs the cluster, beats, a card and headers over a
//   whole card cycle, at 20 and at 1,000 installed backends; presence_msg_bytes_1000: its largest card then.
import { connect as natsConnect, type Msg } from '@nats-io/transport-node';
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from '../electron/agent/connect.ts';
import { startAgent, type Agent } from '../electron/agent/test-agent.ts';
import { DEFAULT_HEARTBEAT_MS } from '../electron/cluster/defaults.ts';
import { CARD_EVERY_HEARTBEATS } from '../electron/cluster/member.ts';
import { presenceSubject } from '../electron/cluster/subjects.ts';
import { trustingHomes } from '../electron/cluster/test-cluster.ts';
import { startNats } from '../electron/cluster/test-nats.ts';
import { echoSource, installedBackends, tempDir, writeGallery } from '../electron/core/testing/fixtures.ts';
import type { NodeCard, NodeEvent } from '../shared/types.ts';
import type { WireClient } from '../shared/wire-client.ts';
import { median, type BenchFigure } from './figure.ts';

const RUNS = 5;
/** One whole card cycle: the beats between two cards and one card, so the figure holds both. */
const PRESENCE_WINDOW_MS = CARD_EVERY_HEARTBEATS * DEFAULT_HEARTBEAT_MS;

/** Resolves with the first event `pick` maps to a value. */
function nextEvent<T>(client: WireClient, pick: (e: NodeEvent) => T | undefined): Promise<T> {
  return new Promise((resolve) => {
    const off = client.onEvent((e) => {
      const value = pick(e);
      if (value === undefined) return;
      off();
      resolve(value);
    });
  });
}

async function online(client: WireClient, name: string): Promise<NodeCard> {
  for (;;) {
    const card = (await client.nodes({ node: 'local' })).find((c) => c.name === name && c.status === 'online');
    if (card) return card;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function convergence(root: string, natsUrl: string): Promise<{ ratio: number; total: number; detect: number; manual: number }> {
  const gallery = join(root, 'converge.yaml');
  const homes = { viewer: join(root, 'converge-viewer'), node: join(root, 'converge-node') };
  await trustingHomes(Object.values(homes));
  let version = 0;
  const offerNext = async () => {
    version++;
    const v = `1.0.${version}`;
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, v), version: v }]);
    return v;
  };
  await offerNext();
  const viewer = await startAgent(homes.viewer, gallery, ['--cluster', natsUrl, '--name', 'viewer', '--cluster-role', 'viewer']);
  const nodeArgs = ['--cluster', natsUrl, '--name', 'node', '--restore-backends'];
  let node: Agent = await startAgent(homes.node, gallery, nodeArgs);
  const client = await connect({ node: viewer.url, home: viewer.home });
  const manual: number[] = [];
  const total: number[] = [];
  const detect: number[] = [];
  try {
    const id = (await online(client, 'node')).id;
    await client.waitJob({ node: id, id: (await client.install({ node: id, name: 'echo' })).id });
    await client.load({ node: id, backend: 'echo', model: 'm1' });
    /** Stops the node, lets `meanwhile` change what the cluster or its gallery says, and starts it again. */
    const away = async (meanwhile: () => Promise<void>) => {
      node.child.kill('SIGTERM');
      await once(node.child, 'exit');
      await meanwhile();
      const returned = nextEvent(client, (e) => (e.type === 'member' && e.member.id === id && e.member.status === 'online' ? performance.now() : undefined));
      node = await startAgent(homes.node, gallery, nodeArgs);
      return returned;
    };
    for (let run = 0; run < RUNS; run++) {
      // By hand: back with a newer version on offer, it is told to upgrade the moment it returns.
      await client.unpin({ node: 'local', name: 'echo' }).catch(() => undefined);
      const back = await away(async () => void (await offerNext()));
      const done = await client.waitJob({ node: id, id: (await client.upgrade({ node: id, name: 'echo' })).id });
      manual.push(performance.now() - back);
      if (done.state !== 'done') throw new Error(`upgrade by hand: ${done.error}`);

      // By itself: away while the cluster is told to want the next version; back, it follows.
      let wanted = '';
      const jobStarted = nextEvent(client, (e) => (e.type === 'job' && e.node === id && e.job.backend === 'echo' ? performance.now() : undefined));
      const converged = nextEvent(client, (e) => (e.type === 'job' && e.node === id && e.job.state === 'done' ? performance.now() : undefined));
      const returned = await away(async () => {
        wanted = await offerNext();
        await client.pin({ node: 'local', name: 'echo', version: wanted, on: 'all' });
      });
      const [detected, end] = await Promise.all([jobStarted, converged]);
      const now = (await client.backends({ node: id }))[0];
      if (now?.version !== wanted) throw new Error(`the node runs ${now?.version}, not ${wanted}`);
      total.push(end - returned);
      detect.push(detected - returned);
    }
  } finally {
    client.close();
    viewer.child.kill('SIGKILL');
    node.child.kill('SIGKILL');
  }
  const rest = total.map((t, i) => (t - detect[i]!) / median(manual));
  return { ratio: median(rest), total: median(total), detect: median(detect), manual: median(manual) };
}

async function resumeDetection(root: string, natsUrl: string): Promise<number> {
  const gallery = join(root, 'resume.yaml');
  const names = ['r1', 'r2', 'watcher', ...Array.from({ length: RUNS }, (_, i) => `coordinator-${i}`)];
  await trustingHomes(names.map((n) => join(root, `resume-${n}`)));
  let version = 0;
  const offerNext = async () => {
    version++;
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, `2.0.${version}`), version: `2.0.${version}` }]);
  };
  await offerNext();
  const agents: Agent[] = [];
  const start = async (name: string, extra: string[] = []) => {
    const agent = await startAgent(join(root, `resume-${name}`), gallery, ['--cluster', natsUrl, '--name', name, ...extra]);
    agents.push(agent);
    return agent;
  };
  const watcher = await start('watcher', ['--cluster-role', 'viewer']);
  for (const name of ['r1', 'r2']) await start(name);
  const client = await connect({ node: watcher.url, home: watcher.home });
  const samples: number[] = [];
  try {
    for (const name of ['r1', 'r2']) {
      const { id } = await online(client, name);
      await client.waitJob({ node: id, id: (await client.install({ node: id, name: 'echo' })).id });
      await client.load({ node: id, backend: 'echo', model: 'm1' });
    }
    for (let run = 0; run < RUNS; run++) {
      await offerNext();
      const coordinator = await start(`coordinator-${run}`, ['--cluster-role', 'viewer']);
      const remote = await connect({ node: coordinator.url, home: coordinator.home });
      for (const name of ['r1', 'r2']) {
        const { id } = await online(remote, name);
        while (!(await remote.backends({ node: id }))[0]?.upgradable) await new Promise((r) => setTimeout(r, 20));
      }
      const killed = nextEvent(client, (e) => {
        if (e.type !== 'rollout' || e.rollout.state !== 'running' || e.rollout.nodes[0]?.step !== 'upgraded') return undefined;
        coordinator.child.kill('SIGKILL');
        return { at: performance.now(), id: e.rollout.id };
      });
      void remote.rollout({ node: 'local', name: 'echo' }).catch(() => undefined);
      const { at, id } = await killed;
      remote.close();
      const seen = await nextEvent(client, (e) => (e.type === 'rollout' && e.rollout.id === id && e.rollout.state === 'interrupted' ? performance.now() : undefined));
      samples.push(seen - at);
      await client.resumeRollout({ node: 'local', id });
      while ((await client.rollouts({ node: 'local' })).find((r) => r.id === id)?.state !== 'done') await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    client.close();
    for (const agent of agents) agent.child.kill('SIGKILL');
  }
  return median(samples);
}

/** Bytes a node's presence subject carries per second (card and headers), and its largest message, at `count` backends. */
async function presenceCost(root: string, natsUrl: string, count: number): Promise<{ perSecond: number; largest: number }> {
  const home = join(root, `presence-${count}`);
  const gallery = await installedBackends(root, home, count);
  const agent = await startAgent(home, gallery, ['--cluster', natsUrl, '--name', `presence-${count}`]);
  const nc = await natsConnect({ servers: natsUrl.replace('nats://', '') });
  try {
    const client = await connect({ node: agent.url, home });
    const id = (await client.clusterStatus({ node: 'local' })).id!;
    client.close();
    let bytes = 0;
    let largest = 0;
    const size = (msg: Msg) => {
      let headers = 0;
      if (msg.headers) for (const [key, values] of msg.headers) headers += values.reduce((sum, v) => sum + key.length + v.length + 4, 0);
      return msg.subject.length + msg.data.length + headers + 16;
    };
    // A moment to settle (its first counts refreshed), then a window of ordinary heartbeats.
    await new Promise((r) => setTimeout(r, 2 * DEFAULT_HEARTBEAT_MS));
    const sub = nc.subscribe(presenceSubject(id), {
      callback: (_error, msg) => {
        const n = size(msg);
        bytes += n;
        largest = Math.max(largest, n);
      },
    });
    await new Promise((r) => setTimeout(r, PRESENCE_WINDOW_MS));
    sub.unsubscribe();
    return { perSecond: bytes / (PRESENCE_WINDOW_MS / 1000), largest };
  } finally {
    await nc.close();
    agent.child.kill('SIGKILL');
  }
}

export default async function (): Promise<BenchFigure[]> {
  const root = await tempDir('bench-cluster-state');
  const nats = await startNats();
  try {
    const converge = await convergence(root, nats.url);
    const resume = await resumeDetection(root, nats.url);
    const small = await presenceCost(root, nats.url, 20);
    const large = await presenceCost(root, nats.url, 1000);
    const heartbeat = DEFAULT_HEARTBEAT_MS;
    return [
      {
        name: 'converge_ratio',
        value: converge.ratio,
        unit: 'x',
        goal: 1.3,
        note: `a returning node's convergence less its detection, ${(converge.total - converge.detect).toFixed(0)} ms, against the same upgrade by hand the moment it returns, ${converge.manual.toFixed(0)} ms (a model reloaded in each)`,
      },
      {
        name: 'converge_ms',
        value: converge.total,
        unit: 'ms',
        goal: Math.round(1.3 * converge.manual + converge.detect),
        note: `its return (first card heard) to the desired version running; goal 1.3 × the upgrade by hand + the detection, ${converge.detect.toFixed(0)} ms`,
      },
      { name: 'rollout_resume_ms', value: resume, unit: 'ms', goal: 3 * heartbeat + 1000, note: `coordinator SIGKILL to interrupted in another viewer, ${heartbeat} ms heartbeat` },
      { name: 'presence_bytes_per_node_s_20', value: small.perSecond, unit: 'B/s', goal: 2048, note: `beats, a card and headers on its presence subject over one card cycle, ${PRESENCE_WINDOW_MS / 1000} s, 20 backends` },
      { name: 'presence_bytes_per_node_s_1000', value: large.perSecond, unit: 'B/s', goal: 2048, note: `the same with 1,000 installed backends` },
      { name: 'presence_msg_bytes_1000', value: large.largest, unit: 'B', goal: 8192, note: 'the largest presence message at 1,000 backends' },
    ];
  } finally {
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  }
}
