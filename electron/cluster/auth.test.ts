// A cluster set up as the README says, on a real nats-server (Debian's 2.9) running the configuration
// `hangar cluster nats-config` wrote: each machine's key made with `hangar cluster key`, the README's generator
// command (with this file's own port), `nats-server -c nats.conf`, then exactly the commands it printed for each
// machine. Roles are split: node credentials serve only their own subjects, viewer
// credentials call, and each viewer reads only its own inbox.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { connect, PermissionViolationError, type NatsConnection } from '@nats-io/transport-node';
import { after, before, describe, test } from 'node:test';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { cli, hangar, json, read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import { loadIdentity } from './node-key.ts';
import { sign } from './signed.ts';
import { BUCKETS, callSubject, presenceSubject } from './subjects.ts';
import { runNats, type NatsServer } from './test-nats.ts';

const run = promisify(execFile);
/** This file's own fixed ports, below the ephemeral range: the server, then each agent's backends. */
const NATS_PORT = 23651;
const URL = `nats://127.0.0.1:${NATS_PORT}`;
const PORTS: Record<string, string> = { gpu1: '23500-23529', gpu2: '23530-23559', desk: '23560-23589', ops: '23590-23619', ops2: '23620-23649' };

interface Steps {
  config: string;
  storeDir: string;
  machines: Array<{ machine: string; commands: string[] }>;
}

describe('a cluster set up with hangar cluster nats-config', () => {
  let root: string;
  let gallery: string;
  let nats: NatsServer;
  let steps: Steps;
  const homes: Record<string, string> = {};
  const keys: Record<string, { id: string; key: string }> = {};
  const passwords: Record<string, string> = {};
  const agents: Record<string, Agent> = {};

  const asUser = (user: string): Promise<NatsConnection> => connect({ servers: `127.0.0.1:${NATS_PORT}`, user, pass: passwords[user]! });
  const serverErrors = (nc: NatsConnection): Error[] => {
    const seen: Error[] = [];
    void (async () => {
      for await (const s of nc.status()) if (s.type === 'error') seen.push(s.error);
    })();
    return seen;
  };

  /** Runs one printed command on a machine: a `hangar cluster …` line there, or its agent. */
  async function runOn(machine: string, command: string): Promise<void> {
    const env = /^HANGAR_CLUSTER_PASSWORD=(\S+) (.*)$/.exec(command);
    let words = (env ? env[2]! : command).split(' ');
    assert.equal(words[0], 'hangar', command);
    // Its URL is a loopback address: every machine is this one, each with a home of its own beside nats.conf.
    assert.deepEqual(words.slice(1, 3), ['--home', homes[machine]], command);
    words = ['hangar', ...words.slice(3)];
    if (words[1] === 'agent') {
      assert.match(command, / --listen 127\.0\.0\.1:0 --ports 30[1-5]00-30[1-5]99$/, 'a port range of its own, not another agent\'s');
      passwords[machine] = env![1]!;
      agents[machine] = await startAgent(homes[machine]!, gallery, [...words.slice(2), '--ports', PORTS[machine]!, '--heartbeat', '300'], {
        ...process.env,
        HANGAR_CLUSTER_PASSWORD: env![1]!,
      });
      return;
    }
    const result = await cli('--home', homes[machine]!, ...words.slice(1));
    assert.equal(result.code, 0, result.stderr);
  }

  before(async () => {
    root = await tempDir('cluster-auth');
    gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    for (const name of ['gpu1', 'gpu2', 'desk', 'ops', 'ops2']) {
      homes[name] = join(root, name);
      const key = await cli('--home', homes[name], 'cluster', 'key', '--json');
      assert.equal(key.code, 0, key.stderr);
      keys[name] = JSON.parse(key.stdout) as { id: string; key: string };
    }
    const generated = await cli(
      'cluster', 'nats-config', '--node', `gpu1=${keys.gpu1!.key}`, '--node', `gpu2=${keys.gpu2!.id}`, '--viewer', `desk=${keys.desk!.key}`, '--viewer', `ops=${keys.ops!.key}`,
      '--listen', `127.0.0.1:${NATS_PORT}`, '--url', URL, '--out', join(root, 'nats.conf'), '--json',
    );
    assert.equal(generated.code, 0, generated.stderr);
    steps = JSON.parse(generated.stdout) as Steps;
    assert.equal((await stat(steps.config)).mode & 0o777, 0o600, 'the configuration holds passwords: owner-only');
    nats = await runNats(['-c', steps.config]);
    for (const { machine, commands } of steps.machines) for (const command of commands) await runOn(machine, command);
  });

  after(async () => {
    for (const agent of Object.values(agents)) agent.child.kill('SIGKILL');
    await nats?.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('nats-server 2.9 runs the generated configuration with JetStream, and the printed commands join every machine', async () => {
    assert.ok((await stat(join(steps.storeDir, 'jetstream'))).isDirectory(), 'JetStream keeps its store where the configuration says');
    // Each node trusts both viewers; each viewer the other, whose rollouts and pins it takes.
    assert.deepEqual(steps.machines.map((m) => [m.machine, m.commands.length]), [['gpu1', 3], ['gpu2', 3], ['desk', 2], ['ops', 2]]);
    for (const viewer of ['desk', 'ops']) {
      const cards = await until(`both nodes seen by ${viewer}`, async () => {
        const all = await read(agents[viewer]!, 'nodes');
        return all.filter((c) => c.status === 'online' && c.access === 'trusted').length === 2 ? all : undefined;
      }, 15_000);
      assert.deepEqual(cards.map((c) => [c.name, c.access]).sort(), [['gpu1', 'trusted'], ['gpu2', 'trusted'], [viewer, 'self']].sort());
    }
  });

  test('a viewer installs on a node and lists it there; a node-only host serves itself and calls no other', async () => {
    const installed = await hangar(agents.desk!, 'install', 'echo', '--on', 'gpu1');
    assert.equal(installed.code, 0, installed.stderr);
    assert.deepEqual((await json<Array<{ name: string }>>(agents.ops!, 'ls', '--on', 'gpu1')).map((b) => b.name), ['echo']);
    const fromNode = await hangar(agents.gpu1!, 'ls', '--on', 'gpu2');
    assert.equal(fromNode.code, 5);
    assert.match(fromNode.stderr, /joined the cluster as a node only \(--cluster-role node\)/);
    const itself = await read(agents.gpu1!, 'nodes');
    assert.deepEqual(itself.map((c) => [c.name, c.self]), [['gpu1', true]]);
    const status = await read(agents.gpu1!, 'clusterStatus');
    assert.deepEqual([status.role, status.id, status.trusted, status.violations], ['node', keys.gpu1!.id, 2, []]);
  });

  test("the README's step 4, as written, on desk: a pin a node follows and says so under its own id, a rollout kept in the cluster, nothing refused", async () => {
    const readme = await readFile('README.md', 'utf8');
    const block = readme.slice(readme.indexOf('# 4. On desk:'), readme.indexOf('```', readme.indexOf('# 4. On desk:')));
    const lines = block.split('\n').map((l) => l.replace(/\s+#.*$/, '').trim()).filter((l) => l.startsWith('hangar '));
    assert.deepEqual(lines, ['hangar nodes', 'hangar pin echo 1.0.0 --on gpu2', 'hangar desired', 'hangar upgrade echo --on all --to 1.0.0', 'hangar rollouts']);
    for (const line of lines) {
      const result = await hangar(agents.desk!, ...line.split(' ').slice(1));
      assert.equal(result.code, 0, `${line}: ${result.stderr}`);
      if (line.startsWith('hangar pin')) {
        await until('gpu2 installs the pinned echo and says it converged', async () => {
          const view = await read(agents.ops!, 'desired');
          return view.nodes.some((n) => n.node === keys.gpu2!.id && n.state === 'converged') ? true : undefined;
        }, 15_000);
      }
    }
    assert.deepEqual((await json<Array<{ name: string; version: string }>>(agents.ops!, 'ls', '--on', 'gpu2')).map((b) => [b.name, b.version]), [['echo', '1.0.0']]);
    const listed = await read(agents.ops!, 'rollouts');
    assert.deepEqual(listed.map((r) => [r.coordinator.name, r.state, r.nodes.map((n) => n.step)]), [['desk', 'done', ['unchanged', 'unchanged']]]);
    assert.equal((await hangar(agents.gpu1!, 'pin', 'echo', '1.0.0')).stderr, "hangar: this host joined the cluster as a node only (--cluster-role node): pins and rollouts are a viewer's\n");
    for (const machine of ['gpu1', 'gpu2', 'desk', 'ops']) {
      const status = await read(agents[machine]!, 'clusterStatus');
      assert.deepEqual([status.store, status.violations], [{ available: true, reason: null }, []], `${machine} reads and writes what it needs`);
    }
  });

  test("a node's credentials cannot write desired versions, rollouts or another node's status; a viewer's cannot write a node's status", async () => {
    const kvAs = async (user: string, bucket: string) => {
      const nc = await connect({ servers: `127.0.0.1:${NATS_PORT}`, user, pass: passwords[user]!, inboxPrefix: `_INBOX_${user}` });
      return { nc, kv: await new Kvm(jetstream(nc, { watcherPrefix: `_INBOX_${user}` })).open(bucket) };
    };
    const refused = async (user: string, bucket: string, key: string) => {
      const { nc, kv } = await kvAs(user, bucket);
      try {
        return await kv.put(key, '{}').then(() => 'written', (error: Error) => error.message);
      } finally {
        await nc.close();
      }
    };
    assert.equal(await refused('gpu1', BUCKETS.desired, 'echo'), `Permissions Violation for Publish to "$KV.${BUCKETS.desired}.echo"`);
    assert.equal(await refused('gpu1', BUCKETS.rollouts, 'x'), `Permissions Violation for Publish to "$KV.${BUCKETS.rollouts}.x"`);
    assert.equal(await refused('gpu1', BUCKETS.status, keys.gpu2!.id), `Permissions Violation for Publish to "$KV.${BUCKETS.status}.${keys.gpu2!.id}"`);
    assert.equal(await refused('desk', BUCKETS.status, keys.gpu1!.id), `Permissions Violation for Publish to "$KV.${BUCKETS.status}.${keys.gpu1!.id}"`);
    const view = await read(agents.desk!, 'desired');
    assert.deepEqual(view.desired.map((d) => [d.backend, d.version]), [['echo', '1.0.0']], 'the pin is as the viewer wrote it');
  });

  test("node gpu1's credentials cannot make gpu2 act, answer for it, or speak as it", async () => {
    const intruder = await asUser('gpu1');
    const errors = serverErrors(intruder);
    const gpu1Key = await loadIdentity(homes.gpu1!);
    const before = await json<Array<{ name: string }>>(agents.desk!, 'ls', '--on', 'gpu2');
    try {
      const refusedSubscription = new Promise<Error>((resolve) => {
        intruder.subscribe(callSubject(keys.gpu2!.id), {
          callback: (error) => {
            if (error) resolve(error);
          },
        });
      });
      const error = await refusedSubscription;
      assert.ok(error instanceof PermissionViolationError, String(error));
      // A call signed with gpu1's own key, and gpu2's card in gpu1's name: the server refuses both.
      const subject = callSubject(keys.gpu2!.id);
      const body = Buffer.from(JSON.stringify({ method: 'delete', params: { node: keys.gpu2!.id, name: 'echo' } }));
      const stamp = { at: String(Date.now()), nonce: 'n'.repeat(24) };
      intruder.publish(subject, body, { reply: '_INBOX_n1.x', headers: sign(gpu1Key, 'call', subject, keys.gpu2!.id, '_INBOX_n1.x', stamp, body) });
      intruder.publish(presenceSubject(keys.gpu2!.id), JSON.stringify({ id: keys.gpu2!.id, name: 'gpu2' }));
      await intruder.flush();
      await until('the server refused all three', async () => (errors.length >= 3 ? true : undefined), 2000);
      assert.deepEqual(errors.map((e) => e.message).sort(), [
        `Permissions Violation for Publish to "${presenceSubject(keys.gpu2!.id)}"`,
        `Permissions Violation for Publish to "${subject}"`,
        `Permissions Violation for Subscription to "${subject}"`,
      ].sort());
    } finally {
      await intruder.close();
    }
    assert.deepEqual(await json(agents.desk!, 'ls', '--on', 'gpu2'), before, 'gpu2 did nothing');
    const deskStatus = await read(agents.desk!, 'clusterStatus');
    assert.deepEqual(deskStatus.dropped.cards, {}, 'the refused card never reached a viewer');
  });

  test("one viewer cannot read another's replies: each reads only its own inbox", async () => {
    const snoop = await asUser('ops');
    try {
      const refused = (subject: string) =>
        new Promise<Error>((resolve) =>
          snoop.subscribe(subject, {
            callback: (error) => {
              if (error) resolve(error);
            },
          }),
        );
      const [other, shared] = await Promise.all([refused('_INBOX_desk.>'), refused('_INBOX.>')]);
      assert.match(other.message, /Permissions Violation for Subscription to "_INBOX_desk\.>"/);
      assert.match(shared.message, /Permissions Violation for Subscription to "_INBOX\.>"/);
      assert.deepEqual((await json<Array<{ name: string }>>(agents.desk!, 'ls', '--on', 'gpu1')).map((b) => b.name), ['echo'], "desk's calls still answered");
    } finally {
      await snoop.close();
    }
  });

  test('an agent started in a role its user lacks is told so by the server, and `hangar nodes` shows it', async () => {
    // ops2 borrows the viewer ops's user but forgets --cluster-role viewer: it tries to serve as a node too.
    agents.ops2 = await startAgent(homes.ops2!, gallery, ['--cluster', URL, '--name', 'ops2', '--cluster-user', 'ops', '--ports', PORTS.ops2!], {
      ...process.env,
      HANGAR_CLUSTER_PASSWORD: passwords.ops!,
    });
    const shown = await until('the violations shown', async () => {
      const text = (await hangar(agents.ops2!, 'nodes')).stdout;
      return /the NATS server refused this host: Permissions Violation for Subscription to "hangar\.node\.[0-9a-f]{16}\.call"/.test(text) ? text : undefined;
    }, 15_000);
    assert.match(shown, /the NATS server refused this host: Permissions Violation for Publish to "hangar\.presence\.[0-9a-f]{16}"/);
  });

  test('a wrong password is refused with one clear line', async () => {
    const failed = await run(process.execPath, ['dist/agent/cli.js', 'agent', '--home', join(root, 'wrong'), '--listen', '127.0.0.1:0', '--gallery', gallery, '--cluster', URL, '--cluster-user', 'gpu1'], {
      env: { ...process.env, HANGAR_CLUSTER_PASSWORD: 'wrong' },
      timeout: 20_000,
    }).then(() => null, (error: { code: number; stderr: string }) => error);
    assert.ok(failed, 'the agent did not start');
    assert.equal(failed.code, 5);
    assert.equal(failed.stderr, `hangar: cannot join the cluster at ${URL}: the server refused the credentials (authorization violation)\n`);
  });

  test('a server that does not run there is said so, with what to look at', async () => {
    const away = `nats://127.0.0.1:${NATS_PORT + 1}`;
    const failed = await run(process.execPath, ['dist/agent/cli.js', 'agent', '--home', join(root, 'away'), '--listen', '127.0.0.1:0', '--gallery', gallery, '--cluster', away], { timeout: 20_000 })
      .then(() => null, (error: { code: number; stderr: string }) => error);
    assert.equal(failed?.code, 1);
    assert.equal(failed.stderr, `hangar: cannot join the cluster at ${away}: connection refused (is nats-server running there?)\n`);
  });

  test('a non-loopback server with no credentials is refused before any connection', async () => {
    const failed = await run(process.execPath, ['dist/agent/cli.js', 'agent', '--home', join(root, 'open'), '--listen', '127.0.0.1:0', '--gallery', gallery, '--cluster', 'nats://192.0.2.1:4222'], { timeout: 20_000 })
      .then(() => null, (error: { code: number; stderr: string }) => error);
    assert.equal(failed?.code, 2);
    assert.match(failed?.stderr ?? '', /^hangar: refusing to join nats:\/\/192\.0\.2\.1:4222 with no credentials: pass .* \(or --insecure\)\n$/);
  });
});
