// Cluster homes for tests, set up as a user does it, and what "nothing changed on disk" compares.
import assert from 'node:assert/strict';
import type { KV } from '@nats-io/kv';
import type { Msg, NatsConnection } from '@nats-io/transport-node';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { formatPublicKey, keyId, loadIdentity, type ClusterIdentity } from './node-key.ts';
import { seal, type RecordKind } from './store/sealed.ts';
import { signingKey } from './signed.ts';
import { PRESENCE_QUERY, presenceSubject } from './subjects.ts';
import { addTrust } from './trust.ts';
import { runNats, type NatsServer } from './test-nats.ts';
import { cli, hangar, startAgent, type Agent } from '../agent/test-agent.ts';

/** Each home's key made (`hangar cluster key`), each trusting the others' (`hangar cluster trust KEY`). */
export async function trustingHomes(homes: string[]): Promise<ClusterIdentity[]> {
  const identities = await Promise.all(homes.map((home) => loadIdentity(home)));
  for (const [i, home] of homes.entries()) {
    for (const [j, other] of identities.entries()) if (i !== j) await addTrust(home, other.publicKey, `test-${j}`);
  }
  return identities;
}

/** The next card node `id` sends, asked for as a viewer asks for it (the beats in between are passed over). */
export function nextCard(nc: NatsConnection, id: string): Promise<Msg> {
  return nextOn(nc, id, (msg) => signingKey(msg) !== '', () => nc.publish(PRESENCE_QUERY));
}

/** The next beat node `id` sends between its cards. */
export function nextBeat(nc: NatsConnection, id: string): Promise<Msg> {
  return nextOn(nc, id, (msg) => signingKey(msg) === '');
}

async function nextOn(nc: NatsConnection, id: string, wanted: (msg: Msg) => boolean, ask?: () => void): Promise<Msg> {
  let found = (_msg: Msg) => {};
  const caught = new Promise<Msg>((resolve) => (found = resolve));
  const sub = nc.subscribe(presenceSubject(id), {
    callback: (_e, msg) => {
      if (wanted(msg)) found(msg);
    },
  });
  await nc.flush();
  ask?.();
  try {
    return await caught;
  } finally {
    sub.unsubscribe();
  }
}

/** A key made on the spot, kept in no home, as an attacker makes thousands. */
export function madeUpKey(): ClusterIdentity {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = (publicKey.export({ type: 'spki', format: 'der' }) as Buffer).subarray(12);
  return { id: keyId(raw), publicKey: formatPublicKey(raw), sign: (data) => sign(null, data, privateKey) };
}

/**
 * `body` signed by `identity` as a `kind` record of `cluster` under `key`, written over what the bucket holds under
 * `storedKey` now, as a Hangar writer does it: valid in every way but who signed it. Undefined `body` removes.
 */
export async function writeSigned(kv: KV, cluster: string, identity: ClusterIdentity, kind: RecordKind, key: string, body: unknown, storedKey = key): Promise<number> {
  const head = (await kv.get(storedKey))?.revision ?? 0;
  return kv.put(storedKey, seal(identity, kind, key, { cluster, after: head }, body), { previousSeq: head });
}

/** Every file under `dir` with its size and content hash: what "nothing changed on disk" compares. */
async function snapshot(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (at: string): Promise<void> => {
    for (const entry of await readdir(at, { withFileTypes: true }).catch(() => [])) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) await walk(path);
      else out.push(`${path} ${(await stat(path)).size} ${createHash('sha256').update(await readFile(path)).digest('hex')}`);
    }
  };
  await walk(dir);
  return out.sort();
}

/** What the node keeps that a call could change: its backends and its settings. */
export async function nodeState(home: string): Promise<string[]> {
  const settings = await readFile(join(home, 'state', 'settings.json'), 'utf8').catch(() => 'no settings file');
  return [...(await snapshot(join(home, 'backends'))), `settings: ${settings}`];
}


/** A cluster set up as `hangar cluster nats-config` tells a user to: its agents' commands are handed back to start. */
export interface GeneratedCluster {
  config: string;
  nats: NatsServer;
  homes: Record<string, string>;
  keys: Record<string, { id: string; key: string }>;
  passwords: Record<string, string>;
  /** Each machine's printed `hangar agent` arguments, with its port range and heartbeat added. */
  agentArgs: Record<string, string[]>;
}

export interface GeneratedClusterSetup {
  /** Each machine's home is `<root>/<name>`, beside the configuration, as the printed commands name it. */
  root: string;
  nodes: string[];
  viewers: string[];
  admins?: string[];
  /** Machines whose key no one is told to trust: their trust lines are not run (their credentials stay valid). */
  distrusted?: string[];
  port: number;
  /** Each started machine's backend port range. */
  ports: Record<string, string>;
  heartbeatMs: number;
  /** Runs before a machine's key is made (a home on a small tmpfs). */
  prepare?(machine: string, home: string): Promise<void>;
}

/**
 * The agents of a generated cluster's machines (its records, filled once it is made): `start` runs a machine's printed
 * `hangar agent`, its password in the environment; `ok` runs a command on one that must succeed.
 */
export function clusterAgents(cluster: Pick<GeneratedCluster, 'homes' | 'passwords' | 'agentArgs'>, gallery: () => string) {
  const agents: Record<string, Agent> = {};
  const start = async (machine: string) => {
    agents[machine] = await startAgent(cluster.homes[machine]!, gallery(), cluster.agentArgs[machine]!, { ...process.env, HANGAR_CLUSTER_PASSWORD: cluster.passwords[machine]! });
  };
  const ok = async (machine: string, ...args: string[]) => {
    const result = await hangar(agents[machine]!, ...args);
    assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
    return result;
  };
  return { agents, start, ok };
}

/**
 * Each machine's key made (`hangar cluster key`), `hangar cluster nats-config` naming them, nats-server started on
 * what it wrote, and every trust line it printed run on its machine.
 */
export async function generatedCluster(setup: GeneratedClusterSetup): Promise<GeneratedCluster> {
  const names = [...new Set([...setup.nodes, ...setup.viewers])];
  const homes: Record<string, string> = {};
  const keys: GeneratedCluster['keys'] = {};
  for (const name of names) {
    homes[name] = join(setup.root, name);
    await setup.prepare?.(name, homes[name]);
    const made = await cli('--home', homes[name], 'cluster', 'key', '--json');
    assert.equal(made.code, 0, made.stderr);
    keys[name] = JSON.parse(made.stdout) as { id: string; key: string };
  }
  const generated = await cli(
    'cluster', 'nats-config',
    ...setup.nodes.flatMap((n) => ['--node', `${n}=${keys[n]!.key}`]),
    ...setup.viewers.flatMap((v) => ['--viewer', `${v}=${keys[v]!.key}`]),
    ...(setup.admins ?? []).flatMap((a) => ['--admin', a]),
    '--url', `nats://127.0.0.1:${setup.port}`, '--out', join(setup.root, 'nats.conf'), '--json',
  );
  assert.equal(generated.code, 0, generated.stderr);
  const steps = JSON.parse(generated.stdout) as { config: string; machines: Array<{ machine: string; commands: string[] }> };
  const nats = await runNats(['-c', steps.config]);
  const passwords: Record<string, string> = {};
  const agentArgs: Record<string, string[]> = {};
  const distrusted = (command: string) => (setup.distrusted ?? []).some((m) => command.includes(`--label ${m}`));
  for (const { machine, commands } of steps.machines) {
    for (const command of commands.filter((c) => !distrusted(c))) {
      const env = /^HANGAR_CLUSTER_PASSWORD=(\S+) (.*)$/.exec(command);
      const words = (env ? env[2]! : command).split(' ');
      // Its URL is a loopback address: each machine's commands name its home, the one beside nats.conf.
      assert.deepEqual(words.slice(0, 3), ['hangar', '--home', homes[machine]], command);
      if (!env) {
        const result = await cli(...words.slice(1));
        assert.equal(result.code, 0, result.stderr);
        continue;
      }
      passwords[machine] = env[1]!;
      agentArgs[machine] = [...words.slice(4), '--ports', setup.ports[machine] ?? '0-0', '--heartbeat', String(setup.heartbeatMs)];
    }
  }
  return { config: steps.config, nats, homes, keys, passwords, agentArgs };
}
