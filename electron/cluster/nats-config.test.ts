// Where the generated nats-server listens against the URL its printed commands join, and who may sweep the store.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { clusterMachines, listenAddress, natsConfig, startCommands } from './nats-config.ts';
import { madeUpKey } from './test-cluster.ts';

describe('hangar cluster nats-config', () => {
  test('listens where its URL says: a loopback URL on loopback and its port, any other on every interface', () => {
    assert.deepEqual(listenAddress('nats://127.0.0.1:26422', undefined), { listen: '127.0.0.1:26422', note: null });
    assert.deepEqual(listenAddress('nats://localhost:24222', undefined), { listen: '127.0.0.1:24222', note: null });
    assert.deepEqual(listenAddress('nats://nats.lan', undefined), { listen: '0.0.0.0:4222', note: null });
    assert.deepEqual(listenAddress('nats://nats.lan:4333', '10.0.0.5:4333'), { listen: '10.0.0.5:4333', note: null });
  });

  test('says how a --listen differs from the URL the agents join', () => {
    const { listen, note } = listenAddress('nats://127.0.0.1:26422', '0.0.0.0:4222');
    assert.equal(listen, '0.0.0.0:4222');
    assert.match(note!, /port 4222 while the agents are told to join port 26422/);
    assert.match(note!, /beyond this machine/);
    assert.match(listenAddress('nats://nats.lan:4222', '127.0.0.1:4222').note!, /on loopback only, while agents on other machines join nats\.lan/);
  });

  test('an admin is a viewer given with its key; it alone may remove a stored value, and its agent sweeps', () => {
    const node = `n1=${madeUpKey().publicKey}`;
    assert.throws(() => clusterMachines({ nodes: [node], viewers: ['desk'], admins: ['desk'] }), /--admin desk must name a viewer given with its key/);
    assert.throws(() => clusterMachines({ nodes: [node], viewers: [], admins: ['n1'] }), /--admin n1 must name a viewer/);
    const machines = clusterMachines({ nodes: [node], viewers: [`desk=${madeUpKey().publicKey}`, `ops=${madeUpKey().publicKey}`], admins: ['ops'] });
    const config = natsConfig(machines, { listen: '127.0.0.1:4222', storeDir: '/var/lib/nats' });
    const publish = (user: string) => new RegExp(`user: "${user}"[^\\n]*\\n[^\\n]*\\n\\s*publish: \\{ allow: ([^\\n]*) \\}`).exec(config)![1]!;
    assert.match(publish('ops'), /"\$JS\.API\.STREAM\.MSG\.DELETE\.KV_hangar-desired"/);
    for (const user of ['n1', 'desk']) assert.doesNotMatch(publish(user), /MSG\.DELETE/, user);
    const commands = startCommands(machines, 'nats://nats.lan:4222', '/tmp');
    assert.match(commands.find((m) => m.machine === 'ops')!.commands.at(-1)!, / --cluster-sweep 3600$/);
    assert.doesNotMatch(commands.find((m) => m.machine === 'desk')!.commands.at(-1)!, /--cluster-sweep/);
  });
});
