// A machine revoked from a cluster joined by invitation, on Debian's nats-server in operator mode, as every other
// machine and the revoked one itself say it: a viewer shows the node revoked (never coming back with its credential)
// and `desired` says it does not converge; the node's agent says once, on stderr, that it was revoked, and again in
// the same words when it is started again; invited again, it joins on the same home with the line the invitation
// prints. A revoked viewer says so in its own views. A node started with another machine's credential says once that the server
// refuses it its own subjects. `cluster members` says when each machine was last seen, the admin's own host too when it
// only views the cluster, and why none is known when no agent answers.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { cli, hangar, read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import { decodeInvitation } from './invitation.ts';
import { credsFile } from './joined-home.ts';
import { runNats, type NatsServer } from './test-nats.ts';

/** This file's own fixed ports, below the ephemeral range: the server, then each agent's backends. */
const NATS_PORT = 28700;
const URL = `nats://127.0.0.1:${NATS_PORT}`;
const PORTS: Record<string, string> = { admin: '28710-28719', gpu1: '28720-28729', gpu2: '28730-28739', desk: '28740-28749', desk2: '28750-28759' };
const HEARTBEAT_MS = 300;
const run = promisify(execFile);

describe('a machine revoked from the cluster, and one with another machine\'s credential', () => {
  let root: string;
  let nats: NatsServer;
  const homes: Record<string, string> = {};
  const galleries: Record<string, string> = {};
  const agents: Record<string, Agent> = {};
  const stderr: Record<string, string> = {};
  let membersBefore: { code: number; stdout: string };

  async function invite(...args: string[]): Promise<string> {
    const made = await cli('--home', homes.admin!, 'cluster', 'invite', ...args);
    assert.equal(made.code, 0, made.stderr);
    return /^HANGAR_JOIN_TOKEN=(hjoin1\.\S+) hangar agent\n$/.exec(made.stdout)![1]!;
  }

  async function start(machine: string, extra: string[] = [], token?: string): Promise<void> {
    homes[machine] ??= join(root, machine);
    const env = token === undefined ? process.env : { ...process.env, HANGAR_JOIN_TOKEN: token };
    agents[machine] = await startAgent(homes[machine], galleries[machine] ?? galleries.admin!, ['--ports', PORTS[machine]!, '--heartbeat', String(HEARTBEAT_MS), ...extra], env);
    stderr[machine] = '';
    agents[machine].child.stderr!.on('data', (chunk: Buffer) => (stderr[machine] += chunk.toString()));
  }

  const cards = () => read(agents.desk!, 'nodes');
  /** How many connections the server has taken in since its start, as its monitoring counts them. */
  const connectionsTaken = async () => ((await (await fetch(`${nats.monitor}/varz`)).json()) as { total_connections: number }).total_connections;

  before(async () => {
    root = await tempDir('cluster-revoke');
    const v1 = await echoSource(root, '1.0.0');
    for (const machine of ['admin', 'gpu1', 'gpu2']) {
      galleries[machine] = join(root, `index-${machine}.yaml`);
      await writeGallery(galleries[machine], [{ name: 'echo', uri: v1, version: '1.0.0' }]);
    }
    homes.admin = join(root, 'admin');
    const made = await cli('--home', homes.admin, 'cluster', 'init', '--url', URL, '--out', join(root, 'nats', 'nats.conf'), '--name', 'admin', '--json');
    assert.equal(made.code, 0, made.stderr);
    nats = await runNats(['-c', (JSON.parse(made.stdout) as { config: string }).config, '-m', '-1']);
    membersBefore = await cli('--home', homes.admin, 'cluster', 'members');
    // The admin only views the cluster, as a desk machine does.
    await start('admin', ['--cluster-role', 'viewer']);
    const tokens = { gpu1: await invite('--role', 'node', '--name', 'gpu1'), gpu2: await invite('--role', 'node', '--name', 'gpu2'), desk: await invite('--role', 'viewer', '--name', 'desk') };
    for (const [machine, token] of Object.entries(tokens)) await start(machine, [], token);
    await until('gpu1 and gpu2 online and trusting desk', async () => ((await cards()).filter((c) => c.status === 'online' && c.access === 'trusted').length === 2 ? true : undefined), 15_000);
    const installed = await hangar(agents.desk!, 'install', 'echo', '--on', 'all');
    assert.equal(installed.code, 0, installed.stderr);
  });

  after(async () => {
    for (const agent of Object.values(agents)) agent.child.kill('SIGKILL');
    await nats?.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('members says when each machine was last seen, the admin\'s own viewer-only host too, and why none is known with no agent', async () => {
    assert.equal(membersBefore.code, 0);
    assert.match(membersBefore.stdout, /^admin +node\+viewer +[0-9a-f]{16} +admin +\S+ +- +\S+ +- +-$/m);
    assert.match(membersBefore.stdout, /\nno agent answers on this home: when each machine was last seen is not known \(hangar agent starts one\)\n$/);
    const listed = await cli('--home', homes.admin!, 'cluster', 'members', '--json');
    assert.equal(listed.code, 0, listed.stderr);
    const seen = Object.fromEntries((JSON.parse(listed.stdout) as Array<{ name: string; lastSeen: string | null }>).map((m) => [m.name, m.lastSeen]));
    assert.equal(seen.admin, 'now');
    assert.match(seen.gpu1 ?? '', /^\d{4}-\d\d-\d\dT\S+Z$/);
    assert.equal(seen.desk, null, 'a viewer sends no heartbeat');
    const text = (await cli('--home', homes.admin!, 'cluster', 'members')).stdout;
    assert.match(text, /^admin +node\+viewer +[0-9a-f]{16} +admin +\S+ +- +\S+ +now +-$/m);
    assert.doesNotMatch(text, /no agent answers/);
  });

  test('a revoked node is shown revoked by a viewer, and desired says it does not come back to converge', async () => {
    const revoked = await cli('--home', homes.admin!, 'cluster', 'revoke', 'gpu1');
    assert.equal(revoked.code, 0, revoked.stderr);
    const again = await cli('--home', homes.admin!, 'cluster', 'revoke', 'gpu1');
    assert.equal(again.code, 4);
    assert.match(again.stderr, /^hangar: gpu1 was revoked already, at \d{4}-\d\d-\d\dT\S+Z: a new invitation joins it again \(hangar cluster invite --role node --name gpu1\)\n$/);
    const gpu1 = await until('desk shows gpu1 revoked', async () => (await cards()).find((c) => c.name === 'gpu1' && c.access === 'revoked'), 10_000);
    assert.equal(gpu1.status, 'offline');
    // One revocation, one time: the admin's, wherever it is shown.
    const members = JSON.parse((await cli('--home', homes.admin!, 'cluster', 'members', '--json')).stdout) as Array<{ name: string; revoked: string | null }>;
    const when = members.find((m) => m.name === 'gpu1')!.revoked!;
    assert.match(when, /^\d{4}-\d\d-\d\dT\S+Z$/);
    assert.equal(gpu1.reason, `revoked from the cluster at ${when}`);
    assert.ok(again.stderr.includes(`revoked already, at ${when}:`), again.stderr);
    const onAdmin = await until('the admin\'s host shows gpu1 revoked', async () => (await read(agents.admin!, 'nodes')).find((c) => c.name === 'gpu1' && c.access === 'revoked'), 10_000);
    assert.equal(onAdmin.reason, `revoked from the cluster at ${when}`);
    const nodes = await hangar(agents.desk!, 'nodes');
    assert.match(nodes.stdout, new RegExp(`^gpu1 +[0-9a-f]{16} +offline: revoked from the cluster at ${when} +revoked +`, 'm'));
    assert.match(nodes.stdout, /^gpu2 +[0-9a-f]{16} +online +trusted +/m);

    await writeGallery(galleries.gpu2!, [{ name: 'echo', uri: await echoSource(root, '2.0.0'), version: '2.0.0' }]);
    const pinned = await until('2.0.0 offered on gpu2', async () => {
      const tried = await hangar(agents.desk!, 'pin', 'echo', '2.0.0');
      return tried.code === 0 ? tried : undefined;
    }, 10_000);
    assert.match(pinned.stdout, /^echo 2\.0\.0 is the desired version on every node/);
    const desired = await until('desired lists gpu1', async () => {
      const out = (await hangar(agents.desk!, 'desired')).stdout;
      return /^gpu1 /m.test(out) ? out : undefined;
    }, 5000);
    assert.match(desired, new RegExp(`^gpu1 +[0-9a-f]{16} +echo +2\\.0\\.0 +\\S+ +revoked +offline: revoked from the cluster at ${when}: it cannot come back with its credential, so it does not converge$`, 'm'));
    assert.doesNotMatch(desired, /converges when it is back/);
    // BY names whoever pinned, as the cluster knows it: on the admin's host, the member desk its grant names.
    assert.match(desired, /^echo +2\.0\.0 +.+ +pin +desk +\d{4}-\d\d-\d\dT\S+Z$/m);
    const desiredOnAdmin = (await hangar(agents.admin!, 'desired')).stdout;
    assert.match(desiredOnAdmin, /^echo +2\.0\.0 +.+ +pin +desk +\d{4}-\d\d-\d\dT\S+Z$/m);
  });

  test('the revoked node says once, on stderr, that it was revoked, and nothing of an authorization violation', async () => {
    await until('gpu1 says it was revoked', async () => (/revoked/i.test(stderr.gpu1!) ? true : undefined), 10_000);
    // Its client tries the server again at most once more, refused, then only once a minute, not twice a second for
    // ever: no other machine connects meanwhile, so every connection the server takes in is one of its tries.
    const tries = await connectionsTaken();
    await new Promise((resolve) => setTimeout(resolve, 3000));
    assert.ok((await connectionsTaken()) - tries <= 1, `${(await connectionsTaken()) - tries} tries to reconnect in 3 s`);
    const lines = stderr.gpu1!.split('\n').filter((line) => /revoked|refused|violation|lost the NATS server/i.test(line));
    assert.equal(lines.length, 1, lines.join('\n'));
    // When it was revoked is the admin's to say; the machine says when the server closed its connection.
    assert.match(lines[0]!, /^hangar: cluster: this machine was revoked from the cluster: the NATS server closed its connection at \S+Z and refuses its credential \(hangar cluster members, on an admin, says when it was revoked\); it goes on serving its own host alone, and joins again only with a new invitation$/);
    // Its status says it was revoked, and counts none of the refused tries to reconnect that went by.
    const status = await hangar(agents.gpu1!, 'cluster', 'status');
    assert.match(status.stdout, /^link {5}lost since \S+Z: this machine was revoked from the cluster: /m);
    assert.doesNotMatch(status.stdout, /refused this host|violation/i);
    assert.deepEqual((await read(agents.gpu1!, 'clusterStatus')).violations, []);
    // Started again, it is refused at once, and told why in the same words.
    agents.gpu1!.child.kill('SIGKILL');
    const again = await run(process.execPath, ['dist/agent/cli.js', 'agent', '--home', homes.gpu1!, '--listen', '127.0.0.1:0', '--ports', PORTS.gpu1!]).then(() => ({ code: 0, stderr: '' }), (error: { code: number; stderr: string }) => error);
    assert.equal(again.code, 5);
    assert.equal(again.stderr, `hangar: cannot join the cluster at ${URL}: the server refuses this machine's credential (${credsFile(homes.gpu1!)}): an admin revoked it (hangar cluster members, on an admin, says when), or the server runs another cluster's configuration; a new invitation joins it again (hangar cluster invite, on an admin)\n`);
  });

  test('invited again, the revoked machine joins on its own home with the line the invitation prints, its backends kept', async () => {
    const token = await invite('--role', 'node', '--name', 'gpu1');
    await start('gpu1', [], token);
    await until('gpu1 says it joined', async () => (/^hangar: joined cluster/m.test(stderr.gpu1!) ? true : undefined), 5000);
    assert.match(stderr.gpu1!, /^hangar: the server refuses this home's membership \(gpu1\): the invitation replaces it\nhangar: joined cluster hangar-[0-9a-f]{24} at \S+ as gpu1 \(node\)/);
    const back = await until('desk shows gpu1 online and trusted again', async () => (await cards()).find((c) => c.name === 'gpu1' && c.status === 'online' && c.access === 'trusted'), 10_000);
    assert.equal(back.id, (await read(agents.gpu1!, 'clusterStatus')).id);
    const ls = await hangar(agents.desk!, 'ls', '--on', 'gpu1');
    assert.match(ls.stdout, /^echo +1\.0\.0 /m);
    // Once joined again, the same line is an invitation used already, not used.
    agents.gpu1!.child.kill('SIGTERM');
    await new Promise((resolve) => agents.gpu1!.child.once('exit', resolve));
    await start('gpu1', [], token);
    await until('gpu1 says the invitation is not used', async () => (/^hangar: HANGAR_JOIN_TOKEN is not used: this home joined the cluster already, as gpu1$/m.test(stderr.gpu1!) ? true : undefined), 5000);
  });

  test('a revoked viewer says so in its own views, and a pin there fails at once with why, not as a server that does not answer', async () => {
    await start('desk2', [], await invite('--role', 'viewer', '--name', 'desk2'));
    assert.equal((await cli('--home', homes.admin!, 'cluster', 'revoke', 'desk2')).code, 0);
    await until('desk2 knows it was revoked', async () => ((await read(agents.desk2!, 'clusterStatus')).link.reason?.startsWith('this machine was revoked') ? true : undefined), 10_000);
    const status = await hangar(agents.desk2!, 'cluster', 'status');
    assert.match(status.stdout, /^link {5}lost since \S+Z: this machine was revoked from the cluster: the NATS server closed its connection and refuses its credential \(hangar cluster members, on an admin, says when\)$/m);
    const nodes = await hangar(agents.desk2!, 'nodes');
    assert.match(nodes.stdout, /cluster connection lost: this machine was revoked from the cluster: [^;\n]*says when\)(;|\n|$)/);
    assert.doesNotMatch(nodes.stdout, /retrying/);
    const started = Date.now();
    const pinned = await hangar(agents.desk2!, 'pin', 'echo', '1.0.0');
    assert.deepEqual([pinned.code, pinned.stderr], [1, "hangar: the cluster cannot be reached: this machine was revoked from the cluster: the NATS server closed its connection and refuses its credential (hangar cluster members, on an admin, says when)\n"]);
    assert.ok(Date.now() - started < 3000, 'at once, not after a timeout');
  });

  test("a node started with another machine's credential says once that the server refuses it its own subjects", async () => {
    const other = decodeInvitation(await invite('--role', 'node', '--name', 'gpu3'));
    agents.gpu2!.child.kill('SIGTERM');
    await new Promise((resolve) => agents.gpu2!.child.once('exit', resolve));
    await writeFile(credsFile(homes.gpu2!), other.creds, { mode: 0o600 });
    await start('gpu2');
    await until('gpu2 says the server refuses it', async () => (/refuse/.test(stderr.gpu2!) ? true : undefined), 10_000);
    // Heartbeats, status writes and store reads go on meanwhile, each refused.
    await new Promise((resolve) => setTimeout(resolve, 10 * HEARTBEAT_MS));
    const lines = stderr.gpu2!.split('\n').filter((line) => /refuse|violation/i.test(line));
    assert.equal(lines.length, 1, lines.join('\n'));
    const id = (await read(agents.gpu2!, 'clusterStatus')).id;
    assert.equal(lines[0], `hangar: cluster: the NATS server refuses this node its own subjects (${/\(([^)]*)\)/.exec(lines[0]!)?.[1]}): the credential it joined with (${credsFile(homes.gpu2!)}) was not made for node ${id}, but for another machine or for this one before its key changed: join it with an invitation of its own (hangar cluster invite, on an admin). Each refusal is counted: hangar cluster status`);
    assert.match(lines[0]!, /\(Permissions Violation for (Publish|Subscription) to "[^"]+"\)/);
    const status = await hangar(agents.gpu2!, 'cluster', 'status');
    assert.match(status.stdout, new RegExp(`^the NATS server refused this host: Permissions Violation for Publish to "hangar\\.presence\\.${id}" \\(\\d+ times, last \\S+\\)$`, 'm'));
    const inboxes = status.stdout.split('\n').filter((line) => line.includes('_INBOX'));
    assert.ok(inboxes.length <= 1, `each reply inbox refused is one line, not one per request:\n${status.stdout}`);
  });
});
