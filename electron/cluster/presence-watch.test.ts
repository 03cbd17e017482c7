// Cards go to the hosts someone watches the cluster through, counted by the NATS server itself (its /connz): idle
// nodes hear none, a look through one finds the others at once, and a member that left while no one watched is not
// shown online when someone looks again.
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect as connectNats, type Msg } from '@nats-io/transport-node';
import { hangar, read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import { connect } from '../agent/connect.ts';
import { tempDir, writeGallery } from '../core/testing/fixtures.ts';
import type { NodeCard } from '../../shared/types.ts';
import { CARD_EVERY_HEARTBEATS } from './member.ts';
import { WATCH_LINGER_HEARTBEATS } from './presence.ts';
import { signingKey } from './signed.ts';
import { presenceSubject } from './subjects.ts';
import { trustingHomes } from './test-cluster.ts';
import { startNats, type NatsServer } from './test-nats.ts';

const HEARTBEAT_MS = 200;
const WINDOW_MS = 5 * HEARTBEAT_MS;

/** A message's size as the server carries it: its headers as written on the wire, and its body. */
function sizeOf(msg: Msg): number {
  const lines = [...(msg.headers?.keys() ?? [])].map((key) => `${key}: ${msg.headers!.get(key)}\r\n`);
  return Buffer.byteLength(`NATS/1.0\r\n${lines.join('')}\r\n`) + msg.data.length;
}

describe('presence goes only where the cluster is watched', () => {
  let root: string;
  let nats: NatsServer;
  const agents: Agent[] = [];

  /** Messages the server sent each named connection during one window. */
  const received = async (): Promise<Record<string, number>> => {
    const counts = async () => {
      const reply = (await (await fetch(`${nats.monitor}/connz`)).json()) as { connections: { name: string; out_msgs: number }[] };
      return new Map(reply.connections.map((c) => [c.name, c.out_msgs]));
    };
    const before = await counts();
    await sleep(WINDOW_MS);
    const after = await counts();
    return Object.fromEntries(['n1', 'n2'].map((name) => [name, (after.get(name) ?? 0) - (before.get(name) ?? 0)]));
  };

  before(async () => {
    root = await tempDir('presence-watch');
    nats = await startNats(['-m', '-1']);
    const homes = ['n1', 'n2'].map((name) => join(root, name));
    await trustingHomes(homes);
    const gallery = join(root, 'gallery.yaml');
    await writeGallery(gallery, []);
    for (const [i, home] of homes.entries()) agents.push(await startAgent(home, gallery, ['--cluster', nats.url, '--name', `n${i + 1}`, '--heartbeat', String(HEARTBEAT_MS)]));
  });

  after(async () => {
    for (const agent of agents) agent.child.kill('SIGKILL');
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('idle nodes hear no cards; a look through one finds the other at once, and only it hears cards then', async () => {
    // Once their start's reads of the cluster's store are answered, a whole window passes with nothing.
    await until('a window in which neither node hears a message', async () => {
      const counts = await received();
      return counts.n1 === 0 && counts.n2 === 0 ? true : undefined;
    }, 10_000);
    const cards = await read(agents[0]!, 'nodes');
    assert.deepEqual(cards.map((c) => [c.name, c.status]), [['n1', 'online'], ['n2', 'online']]);
    const watched = await received();
    assert.ok(watched.n1! >= 3, `n1 heard ${watched.n1} messages in ${WINDOW_MS} ms of being watched`);
    assert.equal(watched.n2, 0);
  });

  test('between cards a node sends beats of under 200 bytes that keep it online; a change goes out as a card at once', async () => {
    const n2 = (await read(agents[0]!, 'nodes')).find((c) => c.name === 'n2')!;
    const nc = await connectNats({ servers: nats.url.replace('nats://', '') });
    const heard: Array<{ beat: boolean; bytes: number; labels: unknown }> = [];
    const sub = nc.subscribe(presenceSubject(n2.id), {
      callback: (_e, msg) => {
        const beat = signingKey(msg) === '';
        heard.push({ beat, bytes: sizeOf(msg), labels: beat ? null : (JSON.parse(msg.string()) as NodeCard).labels });
      },
    });
    const client = await connect({ node: agents[0]!.url, home: agents[0]!.home });
    try {
      await sleep((CARD_EVERY_HEARTBEATS + 2) * HEARTBEAT_MS);
      const beats = heard.filter((h) => h.beat);
      assert.ok(beats.length >= CARD_EVERY_HEARTBEATS / 2, `${beats.length} beats in ${CARD_EVERY_HEARTBEATS} heartbeats`);
      const cards = heard.length - beats.length;
      assert.ok(cards >= 1 && cards <= 3, `${cards} cards in ${CARD_EVERY_HEARTBEATS + 2} heartbeats with nothing changed: the one that refreshes the resources`);
      assert.ok(beats.every((b) => b.bytes < 200), `beats of ${beats.map((b) => b.bytes).join(', ')} bytes`);
      const seen = (await read(agents[0]!, 'nodes')).find((c) => c.id === n2.id);
      assert.equal(seen?.status, 'online', 'online on beats alone');
      assert.equal(seen?.access, 'trusted', 'a card without its unchanged trust list keeps the one told before');

      heard.length = 0;
      assert.equal((await hangar(agents[0]!, 'settings', 'labels', 'zone=b', '--on', 'n2')).code, 0);
      const changed = await until('the new labels in a card', async () => heard.find((h) => !h.beat && (h.labels as Record<string, string>).zone === 'b'), 2000);
      assert.ok(changed);
    } finally {
      client.close();
      sub.unsubscribe();
      await nc.close();
    }
  });

  test('a client connected keeps the table live past the linger; after it, the node hears nothing again', async () => {
    const client = await connect({ node: agents[0]!.url, home: agents[0]!.home });
    try {
      await sleep((WATCH_LINGER_HEARTBEATS + 2) * HEARTBEAT_MS);
      assert.ok((await received()).n1! >= 3);
    } finally {
      client.close();
    }
    await sleep((WATCH_LINGER_HEARTBEATS + 2) * HEARTBEAT_MS);
    assert.deepEqual(await received(), { n1: 0, n2: 0 });
  });

  test('a member that left while no one watched is not shown online when someone looks again, and turns offline', async () => {
    agents[1]!.child.kill('SIGKILL');
    const [, n2] = await read(agents[0]!, 'nodes');
    assert.equal(n2?.name, 'n2');
    assert.notEqual(n2?.status, 'online');
    assert.match(n2?.reason ?? '', /^(not heard since this host began watching the cluster|no heartbeat since \d{4}-\d\d-\d\dT)/);
    await until('n2 offline', async () => (await read(agents[0]!, 'nodes')).find((c) => c.name === 'n2' && c.status === 'offline'), 3000 + 3 * HEARTBEAT_MS);
  });
});
