// The cluster's commands as a new user drives them, against Debian's nats-server in operator mode and real agents:
// where `cluster init` writes the server's configuration and where `cluster revoke` writes it again once it was moved;
// `cluster untrust` of the admin's key on a node; `cordon` on a machine invited as a viewer; how long a revoked node
// stays listed; and what `invite`, `revoke` and `members` say when the server does not answer.
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { tempDir } from '../core/testing/fixtures.ts';
import { cli, cliAs, hangar, read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import { connectCluster } from '../nats/connect.ts';
import { readAdmin } from './admin-home.ts';
import { credsFile } from './joined-home.ts';
import { loadIdentity, parsePublicKey } from './node-key.ts';
import { REVOKED_LISTED_MS } from './presence.ts';
import { openMembers, writeGrant } from './store/grants.ts';
import { unseal } from './store/sealed.ts';
import { memberInboxOf } from './subjects.ts';
import { runNats, type NatsServer } from './test-nats.ts';

/** This file's own fixed ports, below the ephemeral range: the server, then each agent's backends. */
const NATS_PORT = 21800;
const URL = `nats://127.0.0.1:${NATS_PORT}`;
const PORTS: Record<string, string> = { gpu: '21810-21819', desk: '21820-21829' };

describe("the cluster's admin commands", () => {
  let root: string;
  let nats: NatsServer;
  let admin: string;
  let written: string;
  const agents: Record<string, Agent> = {};

  const invite = async (name: string, role = 'node') => {
    const made = await cli('--home', admin, 'cluster', 'invite', '--role', role, '--name', name);
    assert.equal(made.code, 0, made.stderr);
    return /^HANGAR_JOIN_TOKEN=(\S+) hangar agent\n$/.exec(made.stdout)![1]!;
  };
  /** Its row in `cluster members --json`. */
  const listedAs = async (name: string) => {
    const listed = await cli('--home', admin, 'cluster', 'members', '--json');
    return (JSON.parse(listed.stdout) as Array<{ name: string; revoked: string | null; revocationCutShort: boolean }>).find((m) => m.name === name);
  };
  const revokedAt = async (name: string) => (await listedAs(name))?.revoked;
  /** The grant the cluster's store holds for key id `id`, as a node reads it: whether it is revoked, and its time. */
  const grantOf = async (id: string) => {
    const cluster = (await readAdmin(admin))!.cluster;
    const nc = await connectCluster({ url: URL, name: 'admin-test', credsFile: credsFile(admin), inboxPrefix: memberInboxOf('admin') });
    try {
      const stored = await (await openMembers(nc, false, memberInboxOf('admin'))).get(id);
      const record = stored && unseal(stored.value, 'grant', id, cluster);
      return record?.ok ? { revoked: (record.body as { revoked: boolean }).revoked, at: record.at } : null;
    } finally {
      await nc.close();
    }
  };

  before(async () => {
    root = await tempDir('cluster-admin-cli');
    admin = join(root, 'admin');
    await mkdir(join(root, 'work'));
    const made = await cliAs({ cwd: join(root, 'work') }, '--home', admin, 'cluster', 'init', '--url', URL, '--name', 'admin');
    assert.equal(made.code, 0, made.stderr);
    written = /^wrote (\S+): cluster /.exec(made.stdout)![1]!;
    nats = await runNats(['-c', written]);
    for (const [name, role] of [['gpu', 'node'], ['desk', 'viewer']] as const) {
      const env = { ...process.env, HANGAR_JOIN_TOKEN: await invite(name, role) };
      agents[name] = await startAgent(join(root, name), null, ['--ports', PORTS[name]!, '--heartbeat', '300'], env);
    }
    await until('desk sees gpu online', async () => ((await hangar(agents.desk!, 'nodes')).stdout.match(/^gpu +[0-9a-f]{16} +online /m) ? true : undefined), 10_000);
  });

  after(async () => {
    for (const agent of Object.values(agents)) agent.child.kill('SIGKILL');
    await nats?.stop();
    await rm(root, { recursive: true, force: true });
  });

  test("init writes the server's configuration in the admin's home, whatever directory it runs in, and says where", async () => {
    assert.equal(written, join(admin, 'nats', 'nats.conf'));
    assert.deepEqual(await readdir(join(root, 'work')), []);
    assert.deepEqual((await readdir(join(admin, 'nats'))).sort(), ['nats-accounts', 'nats-store', 'nats.conf']);
  });

  test('revoke writes the configuration where it is, refuses to write it anew where it was, and says which it wrote', async () => {
    await invite('spare1');
    const moved = join(root, 'etc', 'nats.conf');
    await mkdir(join(root, 'etc'));
    await rename(written, moved);
    const refused = await cli('--home', admin, 'cluster', 'revoke', 'spare1');
    assert.equal(refused.code, 3, refused.stdout);
    assert.equal(refused.stderr, `hangar: the cluster's server configuration is no longer where hangar cluster init wrote it (${written}): nothing was revoked. Say where it is now, and it is written there from then on: hangar cluster revoke spare1 --config FILE\n`);
    await assert.rejects(stat(written), { code: 'ENOENT' });
    assert.equal(await revokedAt('spare1'), null);

    const typo = await cli('--home', admin, 'cluster', 'revoke', 'spare1', '--config', join(root, 'etc', 'nats.cnf'));
    assert.equal(typo.code, 3);
    assert.match(typo.stderr, /^hangar: --config \S+nats\.cnf is no file: it names the configuration the cluster's server runs on \(nats-server -c FILE\); nothing was revoked\n$/);

    const before = await readFile(moved, 'utf8');
    const revoked = await cli('--home', admin, 'cluster', 'revoke', 'spare1', '--config', moved);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.equal(revoked.stdout, `revoked spare1: the server closed its connection and refuses it; no node takes its calls or records\nwrote ${moved} again: a server restarted on it keeps refusing spare1\n`);
    assert.notEqual(await readFile(moved, 'utf8'), before);
    assert.match((await revokedAt('spare1')) ?? '', /^\d{4}-\d\d-\d\dT\S+Z$/);

    // From then on, revoke writes it where --config said, with nothing more to say.
    await invite('spare2');
    const next = await cli('--home', admin, 'cluster', 'revoke', 'spare2');
    assert.equal(next.code, 0, next.stderr);
    assert.match(next.stdout, new RegExp(`^wrote ${moved.replace(/[.]/g, '\\.')} again: `, 'm'));
    await assert.rejects(stat(written), { code: 'ENOENT' });
  });

  test("untrusting the admin's key on a node is refused without --force, and said with what follows", async () => {
    const gpu = join(root, 'gpu');
    const trusted = (await cli('--home', gpu, 'cluster', 'trust', '--json')).stdout;
    const adminKey = (JSON.parse((await cli('--home', admin, 'cluster', 'key', '--json')).stdout) as { id: string; key: string });
    const refused = await cli('--home', gpu, 'cluster', 'untrust', 'admin');
    assert.equal(refused.code, 4, refused.stdout);
    assert.equal(refused.stderr, `hangar: this node would refuse the calls, pins and rollouts of its cluster's admin (key ${adminKey.id}), who invited it; the members that admin granted stay trusted: pass --force to untrust it anyway\n`);
    assert.equal((await cli('--home', gpu, 'cluster', 'trust', '--json')).stdout, trusted);

    const forced = await cli('--home', gpu, 'cluster', 'untrust', 'admin', '--force');
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal(forced.stdout, `no longer trusted: ${adminKey.key} (id ${adminKey.id}, admin)\n`);
    assert.equal(forced.stderr, `hangar: this node refuses the calls, pins and rollouts of its cluster's admin (key ${adminKey.id}), who invited it; the members that admin granted stay trusted, from its next heartbeat; hangar cluster trust ${adminKey.key} --label admin takes it back\n`);
    assert.equal((await cli('--home', gpu, 'cluster', 'trust', adminKey.key, '--label', 'admin')).code, 0);
    assert.equal((await cli('--home', gpu, 'cluster', 'trust', '--json')).stdout, trusted);
  });

  test('cordon on a machine invited as a viewer says it was invited as one, not started with --cluster-role', async () => {
    for (const [command, what] of [['cordon', 'cordoned'], ['drain', 'drained']] as const) {
      const refused = await hangar(agents.desk!, command, ...(command === 'drain' ? ['--yes'] : []));
      assert.equal(refused.code, 4, refused.stdout);
      assert.equal(refused.stderr, `hangar: desk joined the cluster as a viewer only (its invitation's role: hangar cluster invite --role viewer): it runs no backend for the cluster, so it is not ${what}\n`);
    }
  });

  test('a revoked node is listed as revoked for an hour after its revocation, then no more', async () => {
    const gpu = JSON.parse((await cli('--home', join(root, 'gpu'), 'cluster', 'key', '--json')).stdout) as { id: string; key: string };
    const revoked = await cli('--home', admin, 'cluster', 'revoke', 'gpu');
    assert.equal(revoked.code, 0, revoked.stderr);
    const listed = /^gpu +[0-9a-f]{16} +offline: revoked from the cluster at \S+Z +revoked /m;
    await until('desk lists gpu revoked', async () => (listed.test((await hangar(agents.desk!, 'nodes')).stdout) ? true : undefined), 10_000);

    // The same revocation, as the admin signed it an hour and a minute ago.
    const state = (await readAdmin(admin))!;
    const identity = { ...(await loadIdentity(admin)), cluster: state.cluster };
    const nc = await connectCluster({ url: URL, name: 'admin-test', credsFile: credsFile(admin), inboxPrefix: memberInboxOf('admin') });
    const members = await openMembers(nc, false, memberInboxOf('admin'));
    const body = { key: gpu.key, name: 'gpu', role: 'node' as const, invitedBy: 'admin', revoked: true };
    await writeGrant(members, identity, state.cluster, gpu.id, body, Date.now() - REVOKED_LISTED_MS - 60_000);
    await nc.close();
    await until('desk lists gpu no more', async () => ((await read(agents.desk!, 'nodes')).some((c) => c.id === gpu.id) ? undefined : true), 10_000);
    assert.doesNotMatch((await hangar(agents.desk!, 'nodes')).stdout, /^gpu /m);
  });

  test('a revocation cut short after the server took it is said, listed, and finished by revoking again', async () => {
    await invite('spare5');
    const key = (await readAdmin(admin))!.members.find((m) => m.name === 'spare5')!.key;
    const id = parsePublicKey(key)!.id;
    // The admin's own credential gone: the server takes the revocation (through the system account), the grant cannot be written.
    await rename(credsFile(admin), `${credsFile(admin)}.away`);
    const cut = await cli('--home', admin, 'cluster', 'revoke', 'spare5');
    await rename(`${credsFile(admin)}.away`, credsFile(admin));
    assert.equal(cut.code, 6, cut.stderr);
    assert.match(cut.stderr, /; spare5 is revoked on the server \(its connection closed, its credential refused\), but its grant was not withdrawn: hangar cluster revoke spare5 again finishes it\n$/);
    const when = await revokedAt('spare5');
    assert.match(when ?? '', /^\d{4}-\d\d-\d\dT\S+Z$/);
    assert.equal((await grantOf(id))?.revoked, false, 'the grant still stands');
    const table = (await cli('--home', admin, 'cluster', 'members')).stdout;
    assert.match(table, new RegExp(`^spare5 .* ${when} \\(cut short\\)$`, 'm'));
    assert.match(table, /\nspare5's revocation was cut short: its grant was not withdrawn, so the nodes still trust its key \(hangar cluster revoke spare5 finishes it\)\n/);
    assert.equal((await listedAs('spare5'))?.revocationCutShort, true);

    const finished = await cli('--home', admin, 'cluster', 'revoke', 'spare5');
    assert.equal(finished.code, 0, finished.stderr);
    assert.match(finished.stdout, new RegExp(`^finished revoking spare5, revoked at ${when}: the server closed its connection and refuses it; no node takes its calls or records\n`));
    const withdrawn = await grantOf(id);
    assert.deepEqual([withdrawn?.revoked, withdrawn?.at], [true, Date.parse(when!)], 'withdrawn, with the revocation\'s one time');
    assert.equal(await revokedAt('spare5'), when);
    assert.doesNotMatch((await cli('--home', admin, 'cluster', 'members')).stdout, /cut short/);
    assert.equal((await listedAs('spare5'))?.revocationCutShort, false);
    const again = await cli('--home', admin, 'cluster', 'revoke', 'spare5');
    assert.deepEqual([again.code, again.stderr], [4, `hangar: spare5 was revoked already, at ${when}: a new invitation joins it again (hangar cluster invite --role node --name spare5)\n`]);
  });

  test('with the server down, invite, revoke and members say that it does not answer and what was not done', async () => {
    await invite('spare3');
    await nats.stop();
    const down = `the cluster's server at ${URL} does not answer: connection refused (is nats-server running there?)`;
    const invited = await cli('--home', admin, 'cluster', 'invite', '--role', 'node', '--name', 'spare4');
    assert.deepEqual([invited.code, invited.stderr, invited.stdout], [1, `hangar: ${down}; no invitation was made\n`, '']);
    const revoked = await cli('--home', admin, 'cluster', 'revoke', 'spare3');
    assert.deepEqual([revoked.code, revoked.stderr], [1, `hangar: ${down}; nothing was revoked\n`]);
    const members = await cli('--home', admin, 'cluster', 'members');
    assert.equal(members.code, 0, members.stderr);
    assert.match(members.stdout, new RegExp(`\\n${down.replace(/[.()?]/g, '\\$&')}; who used an invitation is not known\\n`));
    assert.doesNotMatch(members.stdout, /spare4/);
    assert.equal(await revokedAt('spare3'), null);
  });
});
