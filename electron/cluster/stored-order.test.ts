// The cluster's stored records against the attacks of issue 39, on Debian's nats-server 2.9 running the configuration
// `hangar cluster nats-config` writes: two nodes and a trusted viewer (desk) set up from its printed commands, a third
// node (n3) whose home is a small real disk, and mallory, a viewer in the configuration whom no one trusts. A bare
// delete marker on a running rollout, records with unbounded times, a record signed for another cluster, a viewer
// whose clock runs ahead, a replay after a node lost its state, a pin naming a rollout no one can see, a record
// removed under its coordinator, the version of a rollout being rolled back, and a full disk: none may move a node or
// break a view.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { headers, type Msg } from '@nats-io/transport-node';
import type { RolloutView } from '../../shared/types.ts';
import { cli, hangar, read, until } from '../agent/test-agent.ts';
import { clusterOf } from './cluster-id.ts';
import { seal } from './store/sealed.ts';
import { sign } from './signed.ts';
import { BUCKETS, callSubject, kvSubject } from './subjects.ts';
import { loadIdentity } from './node-key.ts';
import { madeUpKey, writeSigned } from './test-cluster.ts';
import { HEARTBEAT_MS, ROLLOUT_WAIT_MS, storedOrderRig } from './test-stored-order.ts';

describe("the cluster's stored records: ordered by the store, bound to the cluster", () => {
  const rig = storedOrderRig();
  const { homes, keys, agents, asUser, bucketAs, status, desired, deskPinKey, versions, said, offer, ok, start, stop, online, dropped, quietly, bothWant } = rig;
  before(() => rig.open());
  after(() => rig.close());

  test("the configuration names the cluster, and every member reads that name from the server, not from the store", async () => {
    const name = /\nserver_name: "(hangar-[0-9a-f]{24})"\n/.exec(await readFile(rig.configFile, 'utf8'))?.[1];
    assert.ok(name, 'the generated configuration names the server');
    const nc = await asUser('n1');
    try {
      assert.equal(clusterOf(nc.info), name);
    } finally {
      await nc.close();
    }
    const other = await cli('cluster', 'nats-config', '--node', `n1=${keys.n1!.key}`, '--listen', '127.0.0.1:4222', '--url', 'nats://127.0.0.1:4222', '--out', join(rig.root, 'other.conf'), '--json');
    assert.equal(other.code, 0, other.stderr);
    assert.notEqual(/\nserver_name: "(\S+)"\n/.exec(await readFile(join(rig.root, 'other.conf'), 'utf8'))?.[1], name, 'each configuration names a cluster of its own');
  });

  test("a bare delete or purge marker on a running rollout's record ends nothing: it halts at the failure, the pin is given back, and the node it spared never takes the failed build", async () => {
    await offer('3.0.0', join(rig.root, 'no-such-build'));
    for (const node of ['n1', 'n2']) await ok('desk', 'gallery', '--refresh', '--on', node);
    const mallory = await asUser('mallory');
    const marked = new Set<string>();
    try {
      // As soon as the record appears, mallory puts a delete marker, then a purge marker, over it.
      mallory.subscribe(kvSubject(BUCKETS.rollouts, '>'), {
        callback: (_error, msg) => {
          if (msg.headers?.get('KV-Operation') || marked.has(msg.subject)) return;
          marked.add(msg.subject);
          for (const operation of ['DEL', 'PURGE']) {
            const h = headers();
            h.set('KV-Operation', operation);
            if (operation === 'PURGE') h.set('Nats-Rollup', 'sub');
            mallory.publish(msg.subject, new Uint8Array(), { headers: h });
          }
        },
      });
      await mallory.flush();
      const run = await hangar(agents.desk!, 'upgrade', 'echo', '--on', 'n1,n2', '--to', '3.0.0', '--json');
      assert.equal(run.code, 1, run.stderr);
      const rollout = JSON.parse(run.stdout) as RolloutView;
      assert.equal(marked.size, 1, 'the record was marked deleted while the rollout ran');
      assert.equal(rollout.state, 'halted');
      assert.deepEqual(rollout.nodes.map((n) => [n.name, n.step]), [['n1', 'failed'], ['n2', 'skipped']]);
      assert.equal(rollout.nodes[1]!.reason, 'halted: n1 failed');
    } finally {
      await mallory.close();
    }
    assert.ok((await dropped('desk', /^a (DEL|PURGE) marker/)) >= 1, 'the markers were heard and not taken');
    const shown = await desired();
    assert.deepEqual(shown.desired.map((d) => [d.backend, d.version, d.rollout]), [['echo', '1.0.0', null]], 'the pin before the rollout is in force again');
    assert.equal((await read(agents.desk!, 'rollouts')).find((r) => r.version === '3.0.0')?.state, 'halted', 'every view still lists it, halted');
    // Past the wait for a rollout's record, and with n2 reading the store afresh after a restart.
    await quietly(ROLLOUT_WAIT_MS + 1000);
    await stop('n2');
    await start('n2');
    await online('n2');
    await bothWant('1.0.0');
    await quietly(2000);
    assert.deepEqual(await versions(), [['n1', '1.0.0'], ['n2', '1.0.0']], 'no node took the failed build');
    await offer('1.0.0');
  });

  test("a coordinator whose record is removed under it (signed with its own key, from its stolen password) says so, touches no further node, and gives the pin back", async () => {
    await offer('2.0.0');
    for (const node of ['n1', 'n2']) await ok('desk', 'gallery', '--refresh', '--on', node);
    const thief = await asUser('desk');
    const removed = new Set<string>();
    try {
      const kv = await bucketAs(thief, BUCKETS.rollouts);
      const cluster = clusterOf(thief.info);
      thief.subscribe(kvSubject(BUCKETS.rollouts, '>'), {
        callback: (_error, msg) => {
          const id = msg.subject.slice(kvSubject(BUCKETS.rollouts, '').length);
          if (removed.has(id)) return;
          removed.add(id);
          void (async () => {
            for (let tries = 0; tries < 5; tries++) {
              if (await writeSigned(kv, cluster, rig.desk, 'rollout', id, undefined).then(() => true, () => false)) return;
            }
          })();
        },
      });
      await thief.flush();
      const run = await hangar(agents.desk!, 'upgrade', 'echo', '--on', 'n1,n2', '--to', '2.0.0', '--json');
      const rollout = JSON.parse(run.stdout) as RolloutView;
      assert.equal(rollout.state, 'halted', run.stderr);
      assert.deepEqual(rollout.nodes[1], { ...rollout.nodes[1]!, step: 'skipped', reason: "halted: its record was lost from the cluster's store" });
      assert.match(run.stderr, /n2 \([0-9a-f]{16}\): skipped: halted: its record was lost from the cluster's store/);
      assert.equal((await read(agents.desk!, 'rollouts')).find((r) => r.id === rollout.id)?.state, 'halted', 'its record is written again, halted');
    } finally {
      await thief.close();
    }
    assert.deepEqual((await desired()).desired.map((d) => [d.backend, d.version, d.rollout]), [['echo', '1.0.0', null]], 'the pin before the rollout is in force again');
    // A node it reached before the record went follows the pin given back, once its gallery offers that version.
    await offer('1.0.0');
    for (const node of ['n1', 'n2']) await ok('desk', 'gallery', '--refresh', '--on', node);
    await until('both on 1.0.0', async () => ((await versions()).every(([, v]) => v === '1.0.0') ? true : undefined), 20_000);
  });

  test('records with unbounded or impossible times, from a key no one trusts, break no view on any host', async () => {
    const mallory = await asUser('mallory');
    const forger = madeUpKey();
    const cluster = clusterOf(mallory.info);
    try {
      const rollouts = await bucketAs(mallory, BUCKETS.rollouts);
      const now = new Date().toISOString();
      const record = (id: string, startedAt: string) => ({
        rollout: {
          id, backend: 'echo', version: '0.0.1', on: 'all', maxParallel: 1, state: 'halted', startedAt, finishedAt: now,
          coordinator: { id: forger.id, name: 'x' }, interrupted: null, nodes: [],
        },
        heartbeatMs: 2000, previous: null, beat: 1,
      });
      // Signed at 8.7e15 ms (year 277,000), well formed otherwise.
      await rollouts.put('far-signed', seal(forger, 'rollout', 'far-signed', { cluster, after: 0 }, record('far-signed', now), 8.7e15), { previousSeq: 0 });
      // Signed now, but started in a year no date can show.
      await writeSigned(rollouts, cluster, forger, 'rollout', 'far-started', record('far-started', '+275760-09-13T00:00:00.000Z'));
      await writeSigned(rollouts, cluster, forger, 'rollout', 'listed', record('listed', now));
      const pins = await bucketAs(mallory, BUCKETS.desired);
      const pin = { backend: 'echo', version: '0.0.1', on: 'all', installMissing: false, rollout: null };
      const own = `echo/${keys.mallory!.id}`;
      await pins.put(`echo.${keys.mallory!.id}`, seal(await loadIdentity(homes.mallory!), 'desired', own, { cluster, after: 0 }, pin, 8.7e15), { previousSeq: 0 });
    } finally {
      await mallory.close();
    }
    await until('the sound one listed as untrusted', async () => ((await status('desk')).untrusted.some((r) => r.name === 'listed') ? true : undefined), 5000);
    for (const [machine, views] of [['desk', ['nodes', 'desired', 'rollouts', 'cluster status']], ['n1', ['nodes', 'desired', 'rollouts', 'cluster status']]] as const) {
      for (const view of views) await ok(machine, ...view.split(' '));
    }
    const listed = (await status('desk')).untrusted.map((r) => r.name);
    assert.ok(!listed.includes('far-signed') && !listed.includes('far-started'), 'the impossible ones are dropped, not listed');
    assert.deepEqual((await desired()).desired.map((d) => [d.backend, d.version, d.by]), [['echo', '1.0.0', keys.desk!.id]]);
  });

  test("desk's own pin signed for another cluster, copied into this one where it names its key and revision, is refused", async () => {
    const stolen = await asUser('desk');
    const elsewhere = `hangar-${'ab'.repeat(12)}`;
    try {
      assert.notEqual(clusterOf(stolen.info), elsewhere);
      const kv = await bucketAs(stolen, BUCKETS.desired);
      const pin = { backend: 'echo', version: '2.0.0', on: 'all', installMissing: false, rollout: null };
      await writeSigned(kv, elsewhere, rig.desk, 'desired', `echo/${keys.desk!.id}`, pin, deskPinKey());
    } finally {
      await stolen.close();
    }
    await until('n1 dropped it', async () => ((await dropped('n1', /^signed for another cluster$/)) >= 1 ? true : undefined), 5000);
    await quietly(1000);
    assert.deepEqual((await desired()).desired.map((d) => [d.backend, d.version]), [['echo', '1.0.0']]);
    assert.deepEqual((await Promise.all(['n1', 'n2'].map(said))).map((s) => s?.wanted), ['1.0.0', '1.0.0'], 'every node still takes 1.0.0');
  });

  test("desk's call signed for another cluster is refused by the node it names; the same call signed for this one is answered", async () => {
    const mallory = await asUser('mallory');
    try {
      const answer = async (cluster: string) => {
        const subject = callSubject(keys.n1!.id);
        const reply = `_INBOX_mallory.${randomBytes(8).toString('hex')}`;
        const body = Buffer.from(JSON.stringify({ method: 'info', params: { node: keys.n1!.id } }));
        const stamp = { at: String(Date.now()), nonce: randomBytes(18).toString('base64url') };
        const answered = new Promise<Msg>((resolve) => mallory.subscribe(reply, { max: 1, callback: (_e, m) => resolve(m) }));
        await mallory.flush();
        mallory.publish(subject, body, { reply, headers: sign({ ...rig.desk, cluster }, 'call', subject, keys.n1!.id, reply, stamp, body) });
        return JSON.parse((await answered).string()) as { ok: boolean; error?: { message: string } };
      };
      const elsewhere = await answer(`hangar-${'cd'.repeat(12)}`);
      assert.equal(elsewhere.ok, false);
      assert.equal(elsewhere.error?.message, "the call's signature does not check (bad signature)");
      assert.equal((await answer(clusterOf(mallory.info))).ok, true);
    } finally {
      await mallory.close();
    }
  });

  test('a pin signed by a clock 10 minutes ahead, or at the end of time, freezes nothing: a later pin or unpin is in force at once', async () => {
    const stolen = await asUser('desk');
    const cluster = clusterOf(stolen.info);
    const kv = await bucketAs(stolen, BUCKETS.desired);
    /** desk's own pin, as its agent writes it, but signed at `at`. */
    const aheadPin = async (version: string, at: number) => {
      const head = (await kv.get(deskPinKey()))!.revision;
      const body = { backend: 'echo', version, on: 'nodes:' + [keys.n1!.id, keys.n2!.id].join(','), installMissing: false, rollout: null };
      await kv.put(deskPinKey(), seal(rig.desk, 'desired', `echo/${keys.desk!.id}`, { cluster, after: head }, body, at), { previousSeq: head });
    };
    try {
      await aheadPin('2.0.0', Date.now() + 10 * 60_000);
      await bothWant('2.0.0');
      await ok('desk', 'pin', 'echo', '1.0.0', '--on', 'n1,n2');
      await bothWant('1.0.0');
      await aheadPin('2.0.0', Date.UTC(2199, 11, 31));
      await bothWant('2.0.0');
      await ok('desk', 'unpin', 'echo');
      assert.deepEqual((await desired()).desired, [], 'the unpin is in force');
      await ok('desk', 'pin', 'echo', '1.0.0', '--on', 'n1,n2');
      await bothWant('1.0.0');
    } finally {
      await stolen.close();
    }
    assert.deepEqual(await versions(), [['n1', '1.0.0'], ['n2', '1.0.0']]);
  });

  test('a node that lost what it has seen (cluster-revisions.json gone, desired-seen.json corrupt) takes no replayed pin', async () => {
    await offer('2.0.0');
    for (const node of ['n1', 'n2']) await ok('desk', 'gallery', '--refresh', '--on', node);
    const on = async (version: string) => {
      await until(`both on ${version}`, async () => ((await versions()).every(([, v]) => v === version) ? true : undefined), 20_000);
      // A node says so with its next status write; a loaded machine may take a few heartbeats to show it.
      await until(`both converged on ${version}`, async () => ((await Promise.all(['n1', 'n2'].map(said))).every((s) => s?.wanted === version && s.state === 'converged') ? true : undefined), 20_000);
    };
    await ok('desk', 'pin', 'echo', '2.0.0', '--on', 'n1,n2');
    await on('2.0.0');
    const thief = await asUser('desk');
    try {
      const kv = await bucketAs(thief, BUCKETS.desired);
      const saved = (await kv.get(deskPinKey()))!.value;
      await offer('1.0.0');
      for (const node of ['n1', 'n2']) await ok('desk', 'gallery', '--refresh', '--on', node);
      await ok('desk', 'pin', 'echo', '1.0.0', '--on', 'n1,n2');
      await on('1.0.0');
      await offer('2.0.0');
      await ok('desk', 'gallery', '--refresh', '--on', 'n1');

      await stop('n1');
      await rm(join(homes.n1!, 'state', 'cluster-revisions.json'), { force: true });
      await writeFile(join(homes.n1!, 'state', 'desired-seen.json'), '{"echo": {not json');
      // Played back as it was, and with the key's current revision named as the one it replaces.
      await kv.put(deskPinKey(), saved);
      const head = (await kv.get(deskPinKey()))!.revision;
      await kv.put(deskPinKey(), saved, { previousSeq: head });
      await start('n1');
      await online('n1');
      await until('n1 dropped the replays', async () => ((await dropped('n1', /^not written over the revision it names/)) >= 1 ? true : undefined), 5000);
    } finally {
      await thief.close();
    }
    await quietly(2000);
    assert.deepEqual(await versions(), [['n1', '1.0.0'], ['n2', '1.0.0']], 'no node went back to 2.0.0');
    assert.deepEqual((await desired()).desired.map((d) => d.version), ['1.0.0'], 'desk keeps its own pin in force');
  });

  test("a pin naming a rollout no one can see: the node waits, then says the record is missing, with no event to wake it; it never acts", async () => {
    const stolen = await asUser('desk');
    const id = '0b8e9a51-0000-4000-8000-00000000f00d';
    try {
      const kv = await bucketAs(stolen, BUCKETS.desired);
      const body = { backend: 'echo', version: '2.0.0', on: `nodes:${keys.n1!.id}`, installMissing: false, rollout: id };
      await writeSigned(kv, clusterOf(stolen.info), rig.desk, 'desired', `echo/${keys.desk!.id}`, body, deskPinKey());
    } finally {
      await stolen.close();
    }
    const waiting = await until('n1 waits for the rollout', async () => ((await said('n1'))?.state === 'waiting' ? (await said('n1'))! : undefined), 5000);
    assert.equal(waiting.reason, `rollout ${id} not heard of yet`);
    const missing = await until('n1 says it is missing', async () => {
      const s = await said('n1');
      return s?.reason?.includes('is not in the cluster') ? s : undefined;
    }, ROLLOUT_WAIT_MS + 3000);
    assert.equal(missing.reason, `rollout ${id} is not in the cluster's store (erased?): not acted on until its record is back or the desired version changes`);
    assert.deepEqual(await versions(), [['n1', '1.0.0'], ['n2', '1.0.0']]);
    await ok('desk', 'pin', 'echo', '1.0.0', '--on', 'n1,n2');
    await bothWant('1.0.0');
  });

  test("a rollout's version moves no node while the rollout rolls back: not one it undid, not one it passes by", async () => {
    await offer('2.0.0');
    for (const node of ['n1', 'n2']) await ok('desk', 'gallery', '--refresh', '--on', node);
    const stolen = await asUser('desk');
    const cluster = clusterOf(stolen.info);
    const id = '5e1f0c2a-0000-4000-8000-0000000000bb';
    const step = (node: string, step: string) => ({ id: keys[node]!.id, name: node, step, reason: null, from: '1.0.0', to: step === 'pending' ? null : '2.0.0' });
    /** desk's rollout of 2.0.0, as its agent writes it, `state` with n1 `first` and n2 `second`. */
    const rollout = (state: string, first: string, second: string) => ({
      rollout: {
        id, backend: 'echo', version: '2.0.0', on: 'all', maxParallel: 1, state, startedAt: new Date().toISOString(), finishedAt: state === 'rolled-back' ? new Date().toISOString() : null,
        coordinator: { id: keys.desk!.id, name: 'desk' }, interrupted: null, nodes: [step('n1', first), step('n2', second)],
      },
      heartbeatMs: HEARTBEAT_MS, previous: { backend: 'echo', version: '1.0.0', on: `nodes:${keys.n1!.id},${keys.n2!.id}`, installMissing: false, rollout: null }, beat: 1,
    });
    try {
      // The moment between a rollback's takeover and the previous version given back, held open: the record says it
      // rolls back (n1 undone, n2 passed by), and the version in force is still the rollout's.
      const records = await bucketAs(stolen, BUCKETS.rollouts);
      await writeSigned(records, cluster, rig.desk, 'rollout', id, rollout('rolling-back', 'rolled-back', 'pending'));
      const pins = await bucketAs(stolen, BUCKETS.desired);
      const pin = { backend: 'echo', version: '2.0.0', on: 'all', installMissing: false, rollout: id };
      await writeSigned(pins, cluster, rig.desk, 'desired', `echo/${keys.desk!.id}`, pin, deskPinKey());
      await until("the rollout's version in force", async () => ((await desired()).desired[0]?.rollout === id ? true : undefined), 5000);
      await quietly(3000);
      assert.deepEqual(await versions(), [['n1', '1.0.0'], ['n2', '1.0.0']], 'no node took the version being rolled back');
      await writeSigned(records, cluster, rig.desk, 'rollout', id, rollout('rolled-back', 'rolled-back', 'skipped'));
    } finally {
      await stolen.close();
    }
    await ok('desk', 'pin', 'echo', '1.0.0', '--on', 'n1,n2');
    await bothWant('1.0.0');
    await offer('1.0.0');
  });

  test('a node whose state disk is full answers every call, saying it cannot write its state', async (t) => {
    if (!rig.disk) return t.skip('mounting a tmpfs needs root');
    await rig.disk.fill();
    try {
      // The nonce file's last page may hold a few more lines: calls go on until one needs a page the disk lacks.
      let answer = '';
      for (let i = 0; i < 200 && !answer.includes('cannot write its state'); i++) {
        const call = await hangar(agents.desk!, 'ls', '--on', 'n3');
        assert.doesNotMatch(call.stderr, /did not answer/);
        answer = call.stderr;
      }
      assert.match(answer, /this node cannot write its state \(disk full\)/);
    } finally {
      await rig.disk.free();
    }
    await ok('desk', 'ls', '--on', 'n3');
  });
});
