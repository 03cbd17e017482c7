// A cluster whose machines join by invitation, on Debian's nats-server (2.9) in operator mode, as the README's "Run a
// small cluster" says: `hangar cluster init` on the admin, `nats-server -c` on what it wrote, `hangar agent` there,
// then one `hangar cluster invite` and one `HANGAR_JOIN_TOKEN=<token> hangar agent` for each other machine. No trust
// line and no password is typed anywhere.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, readdir, stat, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, credsAuthenticator, headers, type NatsConnection } from '@nats-io/transport-node';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { cli, hangar, json, read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import { readAdmin } from './admin-home.ts';
import { loadIdentity } from './node-key.ts';
import { decodeInvitation, encodeInvitation } from './invitation.ts';
import { credsFile } from './joined-home.ts';
import { openMembers } from './store/grants.ts';
import { BUCKETS, callSubject, kvSubject, memberInboxOf, presenceSubject } from './subjects.ts';
import { runNats, type NatsServer } from './test-nats.ts';

/** This file's own fixed ports, below the ephemeral range: the server, then each agent's backends. */
const NATS_PORT = 28100;
const URL = `nats://127.0.0.1:${NATS_PORT}`;
const PORTS: Record<string, string> = { admin: '28110-28119', gpu1: '28120-28129', gpu2: '28130-28139', ops: '28140-28149', desk2: '28150-28159' };
const run = promisify(execFile);
const TEST_ONLY = (machine: string) => ['--ports', PORTS[machine]!, '--heartbeat', '300'];
/** The environment `hangar cluster invite`'s line gives the agent: the invitation in it, never on the command line. */
const withToken = (token: string): NodeJS.ProcessEnv => ({ ...process.env, HANGAR_JOIN_TOKEN: token });

describe('a cluster joined by invitation (hangar cluster init, invite, agent --join)', () => {
  let root: string;
  let gallery: string;
  let nats: NatsServer;
  let config: string;
  const homes: Record<string, string> = {};
  const agents: Record<string, Agent> = {};
  const tokens: Record<string, string> = {};

  /** `hangar cluster invite` on the admin: the one line it prints, and the token in it. */
  async function invite(...args: string[]): Promise<string> {
    const made = await cli('--home', homes.admin!, 'cluster', 'invite', ...args);
    assert.equal(made.code, 0, made.stderr);
    const line = /^HANGAR_JOIN_TOKEN=(hjoin1\.\S+) hangar agent\n$/.exec(made.stdout);
    assert.ok(line, made.stdout);
    return line[1]!;
  }

  async function joinWith(machine: string, token: string): Promise<Agent> {
    homes[machine] = join(root, machine);
    return startAgent(homes[machine], gallery, TEST_ONLY(machine), withToken(token));
  }

  /** `hangar agent` refused with `code`: 2 for an invitation on the command line, 1 for one the cluster refuses. */
  const refusedJoin = async (home: string, token: string, code: number, inline = false) => {
    const args = ['dist/agent/cli.js', 'agent', '--home', home, '--listen', '127.0.0.1:0', ...(inline ? ['--join', token] : [])];
    const result = await run(process.execPath, args, { env: inline ? process.env : withToken(token) }).then(() => ({ code: 0, stderr: '' }), (error: { code: number; stderr: string }) => error);
    assert.equal(result.code, code);
    assert.equal(result.stderr.split('\n').length, 2, `one line: ${result.stderr}`);
    assert.deepEqual(await readdir(home).catch(() => []), [], 'nothing written in its home');
    return result.stderr;
  };

  before(async () => {
    root = await tempDir('cluster-join');
    gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    homes.admin = join(root, 'admin');
    const made = await cli('--home', homes.admin, 'cluster', 'init', '--url', URL, '--out', join(root, 'nats', 'nats.conf'), '--name', 'admin', '--json');
    assert.equal(made.code, 0, made.stderr);
    config = (JSON.parse(made.stdout) as { config: string }).config;
    nats = await runNats(['-c', config]);
    agents.admin = await startAgent(homes.admin, gallery, TEST_ONLY('admin'));
    tokens.gpu1 = await invite('--role', 'node', '--name', 'gpu1');
    tokens.gpu2 = await invite('--role', 'node', '--name', 'gpu2', '--labels', 'gpu=a100');
    tokens.ops = await invite('--role', 'viewer', '--name', 'ops', '--expires', '30m');
    for (const machine of ['gpu1', 'ops']) agents[machine] = await joinWith(machine, tokens[machine]!);
    // gpu2's invitation from the environment, kept out of the process list.
    homes.gpu2 = join(root, 'gpu2');
    agents.gpu2 = await startAgent(homes.gpu2, gallery, TEST_ONLY('gpu2'), { ...process.env, HANGAR_JOIN_TOKEN: tokens.gpu2! });
  });

  after(async () => {
    for (const agent of Object.values(agents)) agent.child.kill('SIGKILL');
    await nats?.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('init writes an operator-mode configuration that listens where --url says, and keeps its keys owner-only', async () => {
    const text = await readFile(config, 'utf8');
    assert.match(text, /^listen: "127\.0\.0\.1:28100"$/m);
    assert.match(text, /^operator: "ey/m);
    assert.doesNotMatch(text, /password:/, 'no password: each machine brings its user JWT');
    for (const file of ['cluster-admin.json', 'cluster.creds', 'cluster-key']) {
      assert.equal((await stat(join(homes.admin!, 'state', file))).mode & 0o777, 0o600, file);
    }
    assert.equal((await stat(credsFile(homes.gpu1!))).mode & 0o777, 0o600, "a joined machine's credential too");
    const elsewhere = await cli('--home', join(root, 'lan'), 'cluster', 'init', '--url', 'nats://192.0.2.7:4222', '--out', join(root, 'lan', 'nats.conf'), '--name', 'lan');
    assert.equal(elsewhere.code, 0, elsewhere.stderr);
    assert.ok(elsewhere.stdout.split('\n').includes(`  hangar agent --home ${join(root, 'lan')}`), `the agent's line names its home: ${elsewhere.stdout}`);
    assert.match(elsewhere.stderr, /^hangar: nats-server will listen on every interface \(0\.0\.0\.0:4222\)/);
  });

  test('every machine is online in the admin\'s nodes, and the extra viewer calls both nodes with no trust line typed', async () => {
    const online = await until('gpu1, gpu2 online and trusting the admin', async () => {
      const cards = await read(agents.admin!, 'nodes');
      return cards.filter((c) => c.status === 'online' && (c.access === 'trusted' || c.self)).length === 3 ? cards : undefined;
    }, 15_000);
    assert.deepEqual(online.map((c) => c.name).sort(), ['admin', 'gpu1', 'gpu2']);
    assert.deepEqual(online.find((c) => c.name === 'gpu2')?.labels, { gpu: 'a100' }, 'the labels its invitation gave');
    await until('ops trusted by both nodes', async () => {
      const cards = await read(agents.ops!, 'nodes');
      return cards.filter((c) => c.access === 'trusted' && c.name.startsWith('gpu')).length === 2 ? true : undefined;
    }, 15_000);
    const installed = await hangar(agents.ops!, 'install', 'echo', '--on', 'gpu2');
    assert.equal(installed.code, 0, installed.stderr);
    for (const node of ['gpu1', 'gpu2']) {
      const listed = await hangar(agents.ops!, 'ls', '--on', node);
      assert.equal(listed.code, 0, listed.stderr);
    }
    assert.deepEqual((await json<Array<{ name: string }>>(agents.admin!, 'ls', '--on', 'gpu2')).map((b) => b.name), ['echo']);
    const trustLines = (await readFile(join(homes.gpu1!, 'state', 'cluster-trust'), 'utf8')).trim().split('\n');
    assert.equal(trustLines.length, 1, 'gpu1 trusts the admin its invitation named, and nothing was typed');
  });

  test('agent --join - takes the line cluster invite printed, as pasted, and says when stdin held nothing', async () => {
    const given = (home: string, input: string) => new Promise<{ code: number; stderr: string }>((done) => {
      const child = execFile(process.execPath, ['dist/agent/cli.js', 'agent', '--home', home, '--listen', '127.0.0.1:0', '--join', '-'], (error, _stdout, stderr) => done({ code: error ? (error.code as number) : 0, stderr }));
      child.stdin!.end(input);
    });
    // Used already: refused as that once read, which only a token taken out of the pasted line can be.
    const pasted = await given(join(root, 'pasted'), `  HANGAR_JOIN_TOKEN=${tokens.gpu1!} hangar agent\n`);
    assert.equal(pasted.code, 4, pasted.stderr);
    assert.match(pasted.stderr, /^hangar: this invitation was used already at \S+: each is used once/);
    const empty = await given(join(root, 'empty'), '\n');
    assert.deepEqual([empty.code, empty.stderr], [6, 'hangar: no invitation was given on stdin: paste the line hangar cluster invite printed, or its token\n']);
    for (const home of ['pasted', 'empty']) assert.deepEqual(await readdir(join(root, home)).catch(() => []), [], 'nothing written in its home');
  });

  test('a used, expired, edited or other cluster\'s invitation is refused in one line, and nothing is written', async () => {
    // On the command line every user of the machine could read it: refused before it is even looked at.
    assert.match(await refusedJoin(join(root, 'inline'), tokens.gpu1!, 2, true), /^hangar: an invitation holds this machine's NATS credential and key, and a command line is readable by every user of the machine: give it as HANGAR_JOIN_TOKEN=<token> hangar agent/);
    assert.match(await refusedJoin(join(root, 'again'), tokens.gpu1!, 4), /^hangar: this invitation was used already at \S+: each is used once/);
    const admin = { ...(await loadIdentity(homes.admin!)) };
    const late = encodeInvitation({ ...decodeInvitation(tokens.gpu1!), exp: Date.now() - 120_000 }, admin);
    assert.match(await refusedJoin(join(root, 'late'), late, 4), /^hangar: this invitation expired at \S+ \(2 min ago by this machine's clock\)/);
    const [head, body = '', sig] = tokens.ops!.split('.');
    const edited = `${head}.${body.slice(0, 40)}${body[40] === 'A' ? 'B' : 'A'}${body.slice(41)}.${sig}`;
    assert.match(await refusedJoin(join(root, 'edited'), edited, 6), /^hangar: this invitation (was edited after an admin made it|is damaged)/);
    // Another cluster's admin, whose invitation names this server's address.
    const other = await cli('--home', join(root, 'other'), 'cluster', 'init', '--url', URL, '--out', join(root, 'other', 'nats.conf'), '--name', 'other');
    assert.equal(other.code, 0, other.stderr);
    const otherState = (await readAdmin(join(root, 'other')))!;
    const forged = encodeInvitation({ ...decodeInvitation(tokens.ops!), cluster: otherState.cluster, creds: (await readFile(credsFile(join(root, 'other')), 'utf8')) }, admin);
    assert.match(await refusedJoin(join(root, 'forged'), forged, 5), /^hangar: the server at nats:\/\/127\.0\.0\.1:28100 refused this invitation's credential/);
    // A machine whose clock is 10 min ahead is told so, and joins with the same invitation once it is right.
    const token = await invite('--role', 'viewer', '--name', 'desk2');
    homes.desk2 = join(root, 'desk2');
    const ahead = `--import=data:text/javascript,${encodeURIComponent('const now = Date.now; Date.now = () => now() + 600000;')}`;
    const skewed = await run(process.execPath, ['dist/agent/cli.js', 'agent', '--home', homes.desk2, '--listen', '127.0.0.1:0'], { env: { ...withToken(token), NODE_OPTIONS: ahead } })
      .then(() => null, (error: { code: number; stderr: string }) => error);
    assert.equal(skewed?.code, 1);
    assert.match(skewed?.stderr ?? '', /^hangar: this machine's clock is 600 s ahead of the cluster server's \(at most 60 s\): set it right \(NTP\) and run the same command again\n$/);
    assert.deepEqual(await readdir(homes.desk2).catch(() => []), [], 'nothing written in its home');
    agents.desk2 = await startAgent(homes.desk2, gallery, ['--ports', PORTS.desk2!], withToken(token));
  });

  test('a home that joined already refuses an invitation on stdin, says it does not use one in its environment, and keeps its membership', async () => {
    const home = join(root, 'joined');
    assert.equal((await cli('--home', home, 'cluster', 'init', '--url', URL, '--out', join(root, 'joined', 'nats.conf'), '--name', 'joined')).code, 0);
    const membership = await readFile(join(home, 'state', 'cluster-join.json'), 'utf8');
    const agent = (env: NodeJS.ProcessEnv, input?: string) => new Promise<{ code: number | null; stderr: string }>((done) => {
      const child = execFile(process.execPath, ['dist/agent/cli.js', 'agent', '--home', home, '--listen', '127.0.0.1:0', ...(input === undefined ? [] : ['--join', '-'])], { env }, (error, _stdout, stderr) => done({ code: error ? (error.code as number) : 0, stderr }));
      child.stdin!.end(input ?? '');
    });
    const token = tokens.gpu1!;
    for (const [how, result] of [['stdin', await agent(process.env, token)], ['stdin, damaged', await agent(process.env, 'garbage')]] as const) {
      assert.equal(result.code, 4, `${how}: ${result.stderr}`);
      assert.match(result.stderr, /^hangar: this home joined the cluster already, as joined: run hangar agent without an invitation \(--join, HANGAR_JOIN_TOKEN\), or join from a new home \(--home\)\n$/, how);
    }
    // A service that kept the token in its environment restarts: the agent says it does not use it, and goes on to
    // join with its membership (this home's own cluster has no server here, so only that is looked at).
    for (const given of [token, 'garbage']) {
      const child = spawn(process.execPath, ['dist/agent/cli.js', 'agent', '--home', home, '--listen', '127.0.0.1:0'], { env: withToken(given), stdio: ['ignore', 'ignore', 'pipe'] });
      const exited = once(child, 'exit');
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      try {
        await until('the agent says the token is not used', async () => (/^hangar: HANGAR_JOIN_TOKEN is not used: this home joined the cluster already, as joined$/m.test(stderr) ? true : undefined), 15_000);
        assert.doesNotMatch(stderr, /already, as joined: run hangar agent without/, 'not refused');
      } finally {
        child.kill('SIGKILL');
        await exited;
      }
    }
    assert.equal(await readFile(join(home, 'state', 'cluster-join.json'), 'utf8'), membership);
  });

  test("a node's NATS user cannot speak as another node, read another's inbox, or reach the JetStream API beyond its role", async () => {
    const creds = await readFile(credsFile(homes.gpu1!));
    const nc: NatsConnection = await connect({ servers: URL.slice('nats://'.length), authenticator: credsAuthenticator(creds) });
    const errors: string[] = [];
    void (async () => {
      for await (const s of nc.status()) if (s.type === 'error') errors.push(s.error.message);
    })();
    try {
      const cards = await read(agents.admin!, 'nodes');
      const gpu2 = cards.find((c) => c.name === 'gpu2')!.id;
      nc.subscribe(callSubject(gpu2));
      nc.subscribe('_INBOX.ops.>');
      nc.subscribe('_INBOX.>');
      nc.publish(presenceSubject(gpu2), '{}');
      nc.publish(`$KV.${BUCKETS.status}.${gpu2}`, '{}');
      nc.publish(`$KV.${BUCKETS.members}.x`, '{}');
      nc.publish(`$KV.${BUCKETS.desired}.echo.x`, '{}');
      for (const api of ['STREAM.PURGE.KV_hangar-desired', 'STREAM.CREATE.KV_hangar-desired', 'CONSUMER.CREATE.KV_hangar-rollouts', 'STREAM.INFO.KV_hangar-status', 'STREAM.MSG.DELETE.KV_hangar-desired']) {
        nc.publish(`$JS.API.${api}`, '{}', { reply: '_INBOX.gpu1.x' });
      }
      await nc.flush();
      // It answers into members' inboxes only: a reply subject a caller names cannot make it write anywhere else.
      nc.publish('_INBOX.ops.x', '{}');
      await nc.flush();
      await until('the server refused all twelve', async () => (errors.length >= 12 ? true : undefined), 5000);
      assert.equal(errors.length, 12, errors.join('\n'));
      assert.ok(errors.every((e) => /^Permissions Violation for (Publish|Subscription) to /.test(e)), errors.join('\n'));
    } finally {
      await nc.close();
    }
  });

  test("JetStream's answers to a node's reads, routed onto bucket subjects, and a rollup on its own status key, write nothing", async () => {
    const as = async (machine: string) =>
      connect({ servers: URL.slice('nats://'.length), authenticator: credsAuthenticator(await readFile(credsFile(homes[machine]!))), inboxPrefix: memberInboxOf(machine) });
    const admin = await as('admin');
    const gpu1 = await as('gpu1');
    try {
      const jsm = await jetstreamManager(admin, { checkAPI: false });
      /** A bucket's last sequence and each key's: any write, taken or not, moves one of them. */
      const held = async () => {
        const all: Record<string, unknown> = {};
        for (const bucket of [BUCKETS.rollouts, BUCKETS.desired, BUCKETS.status]) {
          const { state } = await jsm.streams.info(`KV_${bucket}`, { subjects_filter: '>' });
          all[bucket] = { last: state.last_seq, subjects: state.subjects ?? {} };
        }
        return all;
      };
      const [gpu1Id, gpu2Id] = await Promise.all([loadIdentity(homes.gpu1!), loadIdentity(homes.gpu2!)]).then((ids) => ids.map((i) => i.id));
      const before = await held();
      assert.ok(kvSubject(BUCKETS.status, gpu2Id!) in (before[BUCKETS.status] as { subjects: object }).subjects, "gpu2's status is stored");
      const attacks = [
        [`$JS.API.STREAM.INFO.KV_${BUCKETS.desired}`, kvSubject(BUCKETS.rollouts, 'evil')],
        [`$JS.API.STREAM.INFO.KV_${BUCKETS.desired}`, kvSubject(BUCKETS.desired, 'echo.evil')],
        [`$JS.API.DIRECT.GET.KV_${BUCKETS.desired}.${kvSubject(BUCKETS.desired, 'zzz.evil')}`, kvSubject(BUCKETS.status, gpu2Id!)],
      ] as const;
      // The admin hears each answer arrive in the machines' account: the attacks were answered, and went no further.
      const heard: string[] = [];
      for (const [, reply] of attacks) admin.subscribe(reply, { callback: (_e, m) => void heard.push(m.subject) });
      await admin.flush();
      for (const [subject, reply] of attacks) gpu1.publish(subject, '', { reply });
      await until('the three answers heard', async () => (heard.length >= 3 ? true : undefined), 5000);
      const rollup = headers();
      rollup.set('Nats-Rollup', 'all');
      await assert.rejects(jetstream(gpu1).publish(kvSubject(BUCKETS.status, gpu1Id!), 'x', { headers: rollup }), /rollup not permitted/);
      await gpu1.flush();
      assert.deepEqual(await held(), before, 'no bucket holds anything new');
      const cards = await read(agents.admin!, 'nodes');
      assert.deepEqual(cards.filter((c) => c.name.startsWith('gpu')).map((c) => [c.name, c.status]).sort(), [['gpu1', 'online'], ['gpu2', 'online']]);
    } finally {
      await gpu1.close();
      await admin.close();
    }
  });

  test("a viewer's NATS user writes only its own pins, and neither grants nor another's status", async () => {
    const nc = await connect({ servers: URL.slice('nats://'.length), authenticator: credsAuthenticator(await readFile(credsFile(homes.ops!))), inboxPrefix: '_INBOX.ops' });
    const errors: string[] = [];
    void (async () => {
      for await (const s of nc.status()) if (s.type === 'error') errors.push(s.error.message);
    })();
    try {
      const other = (await loadIdentity(homes.admin!)).id;
      nc.publish(`$KV.${BUCKETS.desired}.echo.${other}`, '{}');
      nc.publish(`$KV.${BUCKETS.members}.${other}`, '{}');
      nc.publish(`$KV.${BUCKETS.status}.${other}`, '{}');
      nc.publish(`$JS.API.STREAM.PURGE.KV_${BUCKETS.members}`, '{}', { reply: '_INBOX.ops.x' });
      nc.subscribe('_INBOX.admin.>');
      await nc.flush();
      await until('the server refused all five', async () => (errors.length >= 5 ? true : undefined), 5000);
      assert.ok(errors.every((e) => /^Permissions Violation for (Publish|Subscription) to /.test(e)), errors.join('\n'));
    } finally {
      await nc.close();
    }
  });

  test('revoke cuts the viewer off: its connection closed, its calls refused, its grant withdrawn; members says so', async () => {
    const adminLink = await connect({ servers: URL.slice('nats://'.length), authenticator: credsAuthenticator(await readFile(credsFile(homes.admin!))), inboxPrefix: '_INBOX.admin' });
    const members = await openMembers(adminLink, false, '_INBOX.admin');
    const opsId = (await loadIdentity(homes.ops!)).id;
    const granted = (await members.get(opsId))!;
    const trusted = (await read(agents.gpu1!, 'clusterStatus')).trusted;
    const revoked = await cli('--home', homes.admin!, 'cluster', 'revoke', 'ops');
    assert.equal(revoked.code, 0, revoked.stderr);
    await until('ops refused by the server', async () => {
      const status = await read(agents.ops!, 'clusterStatus');
      return status.link.connected ? undefined : true;
    }, 10_000);
    const call = await hangar(agents.ops!, 'ls', '--on', 'gpu1');
    assert.equal(call.code, 1);
    await until('gpu1 no longer trusts ops', async () => {
      const status = await read(agents.gpu1!, 'clusterStatus');
      return status.trusted === trusted - 1 ? true : undefined;
    }, 10_000);
    // The grant as it was before, played back over the withdrawal (as one who may write grants could): never taken.
    await adminLink.request(`$KV.${BUCKETS.members}.${opsId}`, granted.value);
    await adminLink.close();
    await until('the replayed grant read and refused', async () => {
      const status = await read(agents.gpu1!, 'clusterStatus');
      return Object.keys(status.dropped.records).some((reason) => /a replay/.test(reason)) ? true : undefined;
    }, 10_000);
    assert.equal((await read(agents.gpu1!, 'clusterStatus')).trusted, trusted - 1, 'ops still not trusted');
    const listed = await cli('--home', homes.admin!, 'cluster', 'members', '--json');
    const list = JSON.parse(listed.stdout) as Array<{ name: string; revoked: string | null; invitedBy: string; joined: string | null; lastSeen: string | null }>;
    assert.deepEqual(list.map((m) => [m.name, m.invitedBy, m.joined !== null, m.revoked !== null]), [
      ['admin', 'admin', true, false], ['gpu1', 'admin', true, false], ['gpu2', 'admin', true, false], ['ops', 'admin', true, true], ['desk2', 'admin', true, false],
    ]);
    assert.deepEqual(list.map((m) => m.lastSeen !== null), [true, true, true, false, false], 'the nodes last seen by the admin\'s agent');
    assert.match(await readFile(config, 'utf8'), /HANGAR/, 'the configuration written again, for a restart');
  });
});
