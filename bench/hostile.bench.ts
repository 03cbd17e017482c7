// What floods of hostile input cost, on an open loopback nats-server (no permissions: anyone publishes anything), with a
// viewer and a node that trust each other: the viewer's peak RSS under 500 compressed bombs from a made-up node and
// under 200 large rollout records signed by a key it does not trust, against its RSS idle; a real call's latency while
// the node takes 20,000 signed calls from a key it does not trust, against the same call quiet; and the node's CPU for
// that flood.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect as natsConnect, type Msg } from '@nats-io/transport-node';
import type { ClusterStatusView, NodeCard } from '../shared/types.ts';
import { connect } from '../electron/agent/connect.ts';
import { madeUpKey, trustingHomes, writeSigned } from '../electron/cluster/test-cluster.ts';
import { startNats } from '../electron/cluster/test-nats.ts';
import { sign } from '../electron/cluster/signed.ts';
import { clusterOf } from '../electron/cluster/cluster-id.ts';
import { BUCKETS, callSubject, eventsSubject, presenceSubject } from '../electron/cluster/subjects.ts';
import { startAgent } from '../e2e/fixtures/agent.ts';
import { copyStarterGallery } from '../e2e/fixtures/gallery.ts';
import { median, timed, type BenchFigure } from './figure.ts';

const HEARTBEAT_MS = 500;
const BOMBS = 500;
const RECORDS = 200;
/** The flood: 200 calls at a time, every 20 ms (10,000 a second), so that it lasts while the probes run. */
const FLOOD_BATCH = 200;
const FLOOD_EVERY_MS = 20;
const CALLS = 20_000;
const PROBES = 15;
const gzipAsync = promisify(gzip);

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
/** User and system CPU the process used so far, in ms (clock ticks of 10 ms). */
const cpuMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

/** The highest RSS of `pid` seen every 10 ms until `done` resolves. */
async function peakRss(pid: number, done: () => Promise<boolean>): Promise<number> {
  let peak = rssMb(pid);
  for (let finished = false; !finished; ) {
    peak = Math.max(peak, rssMb(pid));
    finished = await done();
    await sleep(10);
  }
  return Math.max(peak, rssMb(pid));
}

export default async function (): Promise<BenchFigure[]> {
  const root = await mkdtemp(join(tmpdir(), 'hangar-bench-hostile-'));
  const nats = await startNats();
  const nc = await natsConnect({ servers: nats.url.replace('nats://', '') });
  const agents = [];
  try {
    await trustingHomes(['viewer', 'beta'].map((name) => join(root, name)));
    for (const [i, name] of ['viewer', 'beta'].entries()) {
      const gallery = await copyStarterGallery(join(root, `gallery-${name}`));
      agents.push(await startAgent({ home: join(root, name), gallery: gallery.index, args: ['--cluster', nats.url, '--name', name, '--heartbeat', String(HEARTBEAT_MS), '--ports', `272${i}0-272${i}9`] }));
    }
    const [viewer, beta] = agents as [(typeof agents)[0], (typeof agents)[0]];
    const client = await connect({ node: viewer.url, home: viewer.home });
    const status = () => client.clusterStatus({ node: 'local' }) as Promise<ClusterStatusView>;
    const viewerId = (await status()).id!;
    const betaCard = await (async () => {
      for (;;) {
        const card = (await client.nodes({ node: 'local' })).find((c: NodeCard) => c.name === 'beta' && c.status === 'online');
        if (card) return card;
        await sleep(50);
      }
    })();
    await beta.cli('install', 'echo');
    // The viewer's RSS idle: after its first calls, settled.
    await client.backends({ node: betaCard.id });
    await sleep(2000);
    const idle = median(Array.from({ length: 5 }, () => rssMb(viewer.pid())));

    // 500 compressed bombs (64 MiB of spaces each) from a made-up node with a card.
    const bomber = madeUpKey();
    let sequence = Date.now() * 1000;
    const caught = new Promise<Msg>((resolve) => nc.subscribe(presenceSubject(betaCard.id), { max: 1, callback: (_e, m) => resolve(m) }));
    const card = JSON.parse((await caught).string()) as Record<string, unknown>;
    const announce = () => {
      const subject = presenceSubject(bomber.id);
      // The worst case: its card says it trusts the viewer, which makes it a member whose events the viewer takes.
      const data = Buffer.from(JSON.stringify({ ...card, id: bomber.id, name: 'bomber', trusts: [viewerId] }));
      nc.publish(subject, data, { headers: sign(bomber, 'card', subject, bomber.id, '', { at: String(sequence++) }, data) });
    };
    announce();
    const beat = setInterval(announce, HEARTBEAT_MS);
    const bomb = await gzipAsync(Buffer.alloc(64 * 1024 * 1024, 0x20));
    await sleep(HEARTBEAT_MS);
    const dropped = async () => Object.values((await status()).dropped.events).reduce((a, b) => a + b, 0);
    const bombsBefore = await dropped();
    const bombCpuBefore = cpuMs(viewer.pid());
    const subject = eventsSubject(bomber.id);
    for (let i = 0; i < BOMBS; i++) nc.publish(subject, bomb, { headers: sign(bomber, 'event', subject, bomber.id, '', { at: String(sequence++), encoding: 'gzip' }, bomb) });
    await nc.flush();
    const bombsPeak = await peakRss(viewer.pid(), async () => (await dropped()) - bombsBefore >= BOMBS);
    const bombCpu = cpuMs(viewer.pid()) - bombCpuBefore;
    clearInterval(beat);

    // 200 rollout records of 400 KiB, signed by a key the viewer does not trust.
    const outsider = madeUpKey();
    const kv = await new Kvm(jetstream(nc)).open(BUCKETS.rollouts, { allow_direct: true });
    const large = (id: string) => {
      const at = new Date().toISOString();
      const nodes = Array.from({ length: 27 }, () => ({ id: outsider.id, name: 'n', step: 'failed', reason: 'x'.repeat(15 * 1024), from: null, to: null }));
      return { rollout: { id, backend: 'echo', version: '9.9.9', on: 'all', maxParallel: 1, state: 'halted', startedAt: at, finishedAt: at, coordinator: { id: outsider.id, name: 'x' }, interrupted: null, nodes }, heartbeatMs: 2000, previous: null, beat: 0 };
    };
    // The bucket itself takes only so many (64 MiB): the ones past it are refused by the server.
    const writes = Promise.allSettled(Array.from({ length: RECORDS }, (_, i) => writeSigned(kv, clusterOf(nc.info), outsider, 'rollout', `flood-${i}`, large(`flood-${i}`))));
    let stored = 0;
    const recordsPeak = await peakRss(viewer.pid(), async () => {
      stored = (await writes).filter((w) => w.status === 'fulfilled').length;
      return (await status()).untrusted.filter((r) => r.bucket === 'rollouts').length >= stored;
    });
    await viewer.cli('rollouts');

    // A real call, quiet and under 20,000 signed calls from a key beta does not trust.
    const call = () => timed(() => client.backends({ node: betaCard.id }));
    const quiet: number[] = [];
    for (let i = 0; i < PROBES; i++) quiet.push(await call());
    const caller = madeUpKey();
    const target = callSubject(betaCard.id);
    const floods = Array.from({ length: CALLS }, (_, i) => {
      const body = Buffer.from(JSON.stringify({ method: 'delete', params: { node: betaCard.id, name: 'echo' } }));
      const reply = `_INBOX.flood.${i}`;
      return { body, reply, headers: sign(caller, 'call', target, betaCard.id, reply, { at: String(Date.now()), nonce: randomBytes(18).toString('base64url') }, body) };
    });
    const betaCpuBefore = cpuMs(beta.pid());
    // The flood goes out in batches while the probes run, and only probes that ended before its last batch count.
    let flooding = true;
    const sending = (async () => {
      for (let i = 0; i < floods.length; i += FLOOD_BATCH) {
        for (const f of floods.slice(i, i + FLOOD_BATCH)) nc.publish(target, f.body, { reply: f.reply, headers: f.headers });
        await nc.flush();
        await sleep(FLOOD_EVERY_MS);
      }
      flooding = false;
    })();
    const flooded: number[] = [];
    while (flooding) {
      const ms = await call();
      if (flooding) flooded.push(ms);
    }
    await sending;
    if (flooded.length === 0) throw new Error(`no probe ended while the ${CALLS} calls were sent`);
    await sleep(1000);
    const betaCpu = cpuMs(beta.pid()) - betaCpuBefore;
    client.close();

    return [
      { name: 'hostile_viewer_rss_bombs_ratio', value: bombsPeak / idle, unit: '×', goal: 2, note: `peak ${bombsPeak.toFixed(0)} MB under ${BOMBS} compressed 64 MiB bombs from a made-up node (viewer CPU ${bombCpu} ms), idle ${idle.toFixed(0)} MB` },
      { name: 'hostile_viewer_rss_records_ratio', value: recordsPeak / idle, unit: '×', goal: 2, note: `peak ${recordsPeak.toFixed(0)} MB while rollout records of 400 KiB signed by an untrusted key are read (${RECORDS} written, ${stored} taken by the bucket before its 64 MiB limit), idle ${idle.toFixed(0)} MB` },
      { name: 'hostile_call_under_flood_ratio', value: median(flooded) / median(quiet), unit: '×', goal: 2, note: `a backends() call to the node while it takes ${CALLS.toLocaleString('en')} signed calls from an untrusted key, ${((FLOOD_BATCH * 1000) / FLOOD_EVERY_MS).toLocaleString('en')} a second: ${median(flooded).toFixed(1)} ms (median of the ${flooded.length} calls that ended during the flood), quiet ${median(quiet).toFixed(1)} ms (median of ${PROBES})` },
      { name: 'hostile_node_cpu_ms_20k_calls', value: betaCpu, unit: 'ms', goal: 2000, note: `the node's CPU for ${CALLS.toLocaleString('en')} signed calls from an untrusted key (past a burst of 40 and 20 a second they go unanswered, unverified)` },
    ];
  } finally {
    await nc.close();
    for (const agent of agents) await agent.stop();
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  }
}
