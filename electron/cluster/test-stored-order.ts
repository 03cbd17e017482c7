// The cluster of stored-order.test.ts, on Debian's nats-server 2.9 running the configuration `hangar cluster
// nats-config` writes: two nodes and a trusted viewer (desk) set up from its printed commands, a third node (n3) whose
// home is a small real disk, and mallory, a viewer in the configuration whom no one trusts; with what its tests read
// and do through it.
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { NodeConvergence } from '../../shared/types.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { mountTmpfs, type Tmpfs } from '../core/testing/tmpfs.ts';
import { json, read, until } from '../agent/test-agent.ts';
import { loadIdentity, type ClusterIdentity } from './node-key.ts';
import { clusterAgents, generatedCluster } from './test-cluster.ts';
import type { NatsServer } from './test-nats.ts';

/** This file's own fixed ports, below the ephemeral range: the server, then each agent's backends. */
const NATS_PORT = 27400;
const PORTS: Record<string, string> = { n1: '27410-27419', n2: '27420-27429', n3: '27430-27439', desk: '27440-27449' };
export const HEARTBEAT_MS = 300;
/** What a node waits for a rollout's record it has not heard of: 15 heartbeats (converge.ts). */
export const ROLLOUT_WAIT_MS = 15 * HEARTBEAT_MS;

/**
 * The cluster, set up by `open()` and taken down by `close()`. `root`, `configFile`, `desk` (desk's identity) and
 * `disk` (n3's home, null where no tmpfs could be mounted) are there once `open()` has run.
 */
export function storedOrderRig() {
  let root: string;
  let gallery: string;
  let nats: NatsServer;
  let configFile: string;
  let desk: ClusterIdentity;
  let disk: Tmpfs | null = null;
  const homes: Record<string, string> = {};
  const keys: Record<string, { id: string; key: string }> = {};
  const passwords: Record<string, string> = {};
  const agentArgs: Record<string, string[]> = {};
  const { agents, start, ok } = clusterAgents({ homes, passwords, agentArgs }, () => gallery);
  const sources: Record<string, string> = {};

  const asUser = (user: string): Promise<NatsConnection> =>
    connect({ servers: `127.0.0.1:${NATS_PORT}`, user, pass: passwords[user]!, inboxPrefix: `_INBOX_${user}` });
  const bucketAs = (nc: NatsConnection, bucket: string): Promise<KV> => new Kvm(jetstream(nc)).open(bucket, { allow_direct: true });
  const status = (machine: string) => read(agents[machine]!, 'clusterStatus');
  const desired = () => read(agents.desk!, 'desired');
  const deskPinKey = () => `echo.${keys.desk!.id}`;
  const versions = async () =>
    (await json<Array<{ name: string; backends: Array<{ name: string; version: string }> | null }>>(agents.desk!, 'ls', '--on', 'n1,n2')).map((c) => [
      c.name,
      c.backends?.find((b) => b.name === 'echo')?.version ?? null,
    ]);
  /** What each of n1 and n2 says it takes as the desired version of echo, and how it stands. */
  const said = async (node: string): Promise<NodeConvergence | undefined> => (await desired()).nodes.find((n) => n.node === keys[node]!.id && n.backend === 'echo');
  const offer = (version: string, uri = sources[version]!) => writeGallery(gallery, [{ name: 'echo', uri, version }]);
  const stop = async (machine: string) => {
    agents[machine]!.child.kill('SIGKILL');
    await new Promise((resolve) => agents[machine]!.child.once('exit', resolve));
  };
  const online = (machine: string) =>
    until(`${machine} online`, async () => ((await read(agents.desk!, 'nodes')).find((c) => c.name === machine && c.status === 'online') ? true : undefined), 10_000);
  const dropped = async (machine: string, reason: RegExp) => Object.entries((await status(machine)).dropped.records).filter(([r]) => reason.test(r)).reduce((n, [, c]) => n + c, 0);
  const quietly = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** Both nodes take desk's pin of `version` as the one in force. */
  const bothWant = (version: string) =>
    until(`n1 and n2 want ${version}`, async () => {
      const both = await Promise.all(['n1', 'n2'].map(said));
      return both.every((s) => s?.wanted === version) ? both : undefined;
    }, 10_000);

  async function open(): Promise<void> {
    root = await tempDir('stored-order');
    gallery = join(root, 'index.yaml');
    for (const version of ['1.0.0', '2.0.0']) sources[version] = await echoSource(root, version);
    await offer('1.0.0');
    // Every printed command but the trust in mallory's key: her credentials are valid, her key trusted by no one.
    const made = await generatedCluster({
      root, nodes: ['n1', 'n2', 'n3'], viewers: ['desk', 'mallory'], distrusted: ['mallory'], port: NATS_PORT, ports: PORTS, heartbeatMs: HEARTBEAT_MS,
      prepare: async (machine, home) => {
        if (machine !== 'n3') return;
        await mkdir(home, { recursive: true });
        disk = mountTmpfs(home, '16m', 'the full-disk case of stored-order.test.ts');
      },
    });
    ({ nats, config: configFile } = made);
    Object.assign(homes, made.homes);
    Object.assign(keys, made.keys);
    Object.assign(passwords, made.passwords);
    Object.assign(agentArgs, made.agentArgs);
    desk = await loadIdentity(homes.desk!);
    for (const machine of ['n1', 'n2', 'n3', 'desk']) await start(machine);
    await until('the three nodes online and trusting desk', async () => {
      const cards = await read(agents.desk!, 'nodes');
      return cards.filter((c) => c.status === 'online' && c.access === 'trusted').length === 3 ? true : undefined;
    }, 10_000);
    await ok('desk', 'install', 'echo', '--on', 'n1,n2');
    await ok('desk', 'pin', 'echo', '1.0.0', '--on', 'n1,n2');
    await bothWant('1.0.0');
  }

  async function close(): Promise<void> {
    for (const agent of Object.values(agents)) agent.child.kill('SIGKILL');
    await Promise.all(Object.values(agents).map((a) => (a.child.exitCode === null && a.child.signalCode === null ? new Promise((r) => a.child.once('exit', r)) : null)));
    disk?.unmount();
    await nats?.stop();
    await rm(root, { recursive: true, force: true });
  }

  return {
    get root() {
      return root;
    },
    get configFile() {
      return configFile;
    },
    get desk() {
      return desk;
    },
    get disk() {
      return disk;
    },
    homes, keys, agents,
    asUser, bucketAs, status, desired, deskPinKey, versions, said, offer, ok, start, stop, online, dropped, quietly, bothWant,
    open, close,
  };
}
