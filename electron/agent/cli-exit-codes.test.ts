// The exit status of each kind of failure, as the README's table says, against a real agent and the real CLI: what
// was given is bad (6), what is named is not there (3), a refused token (5); each refusal one line, before any job.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import type { JobView } from '../../shared/types.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { cli, cliRunsAsProcesses, cliAs, hangar, json, startAgent, type Agent } from './test-agent.ts';

cliRunsAsProcesses();

const run = promisify(execFile);
const WRONG_SHA256 = '0'.repeat(64);

describe('exit statuses', () => {
  let root: string;
  let gallery: string;
  let agent: Agent;

  before(async () => {
    root = await tempDir('cli-exit-codes');
    gallery = join(root, 'index.yaml');
    const echo = await echoSource(root, '1.0.0');
    await run('tar', ['-czf', join(root, 'echo.tar.gz'), '-C', echo, '.']);
    const broken = join(root, 'broken-src');
    await mkdir(broken);
    await writeFile(join(broken, 'run.sh'), '#!/bin/sh\necho "cannot start" >&2\nexit 7\n', { mode: 0o755 });
    await writeGallery(gallery, [
      { name: 'echo', uri: echo, version: '1.0.0' },
      { name: 'checked', uri: join(root, 'echo.tar.gz'), version: '1.0.0', sha256: WRONG_SHA256 },
      { name: 'folder', uri: echo, version: '1.0.0', sha256: WRONG_SHA256 },
      { name: 'broken', uri: broken, version: '1.0.0' },
    ]);
    agent = await startAgent(join(root, 'home'), gallery);
    assert.equal((await hangar(agent, 'install', 'echo')).code, 0);
  });

  after(async () => {
    agent?.child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  });

  test('an install whose checksum is wrong exits 6, and its job still failed', async () => {
    const checked = await hangar(agent, 'install', 'checked', '--force');
    assert.equal(checked.code, 6, checked.stderr);
    assert.match(checked.stderr, /^hangar: install checked failed: backend "checked": sha256 mismatch for \S+: expected 0{64}, got [0-9a-f]{64}\n$/m);
    const job = (await json<JobView[]>(agent, 'jobs')).find((j) => j.backend === 'checked');
    assert.deepEqual([job?.state, job?.errorCode], ['failed', 'bad-input']);
    const folder = await hangar(agent, 'install', 'folder');
    assert.equal(folder.code, 6, folder.stderr);
    assert.match(folder.stderr, /a sha256 is given, but \S+ is a directory and cannot be verified\n$/);
  });

  test('a token the agent refuses exits 5', async () => {
    const refused = await hangar(agent, '--token', 'wrongwrongwrongwrong', 'ps');
    assert.deepEqual([refused.code, refused.stderr], [5, 'hangar: the agent rejected the token\n']);
  });

  test('a token not given exits 2, and says how to give it', async () => {
    const home = join(root, 'no-token-home');
    await mkdir(home);
    const { HANGAR_TOKEN: _given, ...env } = process.env;
    const missing = await cliAs({ env }, '--node', agent.url, '--home', home, 'ps');
    assert.deepEqual([missing.code, missing.stderr], [2, `hangar: no token for ${agent.url}: pass --token, set HANGAR_TOKEN, or give the --home of the agent, which keeps it\n`]);
  });

  test('an agent killed or stopped on its home: a command says none runs there and how to start one, not the socket\'s error', async () => {
    const start = `start one with \`hangar agent --home HOME\`, or pass --node and --token`;
    for (const [signal, gone] of [['SIGKILL', 'the one at URL stopped without closing; '], ['SIGTERM', '']] as const) {
      const home = join(root, `${signal}-home`);
      const agent = await startAgent(home, null);
      agent.child.kill(signal);
      await once(agent.child, 'exit');
      const result = await cli('--home', home, 'ps');
      const said = `hangar: no agent runs on HOME: ${gone}${start}\n`.replaceAll('HOME', home).replace('URL', agent.url);
      assert.deepEqual([result.code, result.stderr], [1, said], signal);
    }
  });

  test('a cluster option typed wrong exits 2; a creds file damaged or not there exits 6 and names it', async () => {
    const url = await cli('--home', join(root, 'admin'), 'cluster', 'init', '--url', 'nats://127.0.0.1:99999', '--out', join(root, 'nats.conf'));
    assert.deepEqual([url.code, url.stderr], [2, 'hangar: --url wants nats://HOST:PORT, got "nats://127.0.0.1:99999"\n']);
    for (const on of ['', 'a,']) {
      const empty = await hangar(agent, 'ls', '--on', on);
      assert.deepEqual([empty.code, empty.stderr], [2, `hangar: --on wants a node's name or id (hangar nodes), all, A,B or label:KEY=VALUE, got "${on}"\n`]);
    }
    const damaged = join(root, 'bad.creds');
    await writeFile(damaged, 'garbage\n');
    const creds = (file: string) => cli('agent', '--home', join(root, 'creds-home'), '--listen', '127.0.0.1:0', '--cluster', 'nats://127.0.0.1:28199', '--cluster-creds', file);
    const bad = await creds(damaged);
    assert.deepEqual([bad.code, bad.stderr], [6, `hangar: the creds file ${damaged} is damaged (unable to parse credentials): take it again from whoever made it\n`]);
    const gone = await creds(join(root, 'gone.creds'));
    assert.deepEqual([gone.code, gone.stderr], [6, `hangar: the creds file ${join(root, 'gone.creds')} does not exist\n`]);
  });

  test('an empty --home, a --home that is a file and a --node that is not a URL exit 2 or 6, and write nothing', async () => {
    const cwd = join(root, 'cwd');
    await mkdir(cwd);
    const empty = '--home is empty: give the directory of a Hangar home';
    const agentEmpty = await cliAs({ cwd }, 'agent', '--home', '', '--listen', '192.0.2.1:0');
    assert.deepEqual([agentEmpty.code, agentEmpty.stderr], [2, `hangar: ${empty}\n`]);
    const clientEmpty = await cliAs({ cwd }, '--home', '', 'ps');
    assert.deepEqual([clientEmpty.code, clientEmpty.stderr], [2, `hangar: ${empty}\n`]);
    // An empty HANGAR_HOME is as unset: the platform's data dir, never the working directory.
    const { HANGAR_TOKEN: _token, ...env } = process.env;
    const unset = await cliAs({ cwd, env: { ...env, HANGAR_HOME: '', XDG_DATA_HOME: join(root, 'xdg') } }, 'ps');
    assert.equal(unset.code, 1, unset.stderr);
    assert.match(unset.stderr, new RegExp(`^hangar: no agent runs on ${join(root, 'xdg', 'hangar')}:`));
    const file = join(root, 'a-file');
    await writeFile(file, 'not a home\n');
    const agentFile = await cliAs({ cwd }, 'agent', '--home', file, '--listen', '192.0.2.1:0');
    assert.deepEqual([agentFile.code, agentFile.stderr], [6, `hangar: the home ${file} is not a directory\n`]);
    assert.deepEqual(await readdir(cwd), []);
    for (const node of ['http://[::1', 'file:///etc/passwd', '127.0.0.1:8471']) {
      const bad = await hangar(agent, '--node', node, 'ps');
      assert.deepEqual([bad.code, bad.stderr], [2, `hangar: --node wants the agent's URL, http://HOST:PORT, got ${JSON.stringify(node)}\n`], node);
    }
  });

  test('a gallery, a working directory or a previous version that is not there exits 3, before any job', async () => {
    for (const action of ['remove', 'down', 'enable']) {
      const missing = await hangar(agent, 'galleries', action, 'nosuch');
      assert.deepEqual([missing.code, missing.stderr], [3, 'hangar: no gallery named "nosuch"; see hangar galleries\n'], action);
    }
    const leftover = await hangar(agent, 'leftover', 'nosuch', 'restore');
    assert.deepEqual([leftover.code, leftover.stderr], [3, 'hangar: "nosuch" is not a working directory of a backend\n']);
    const jobs = (await json<JobView[]>(agent, 'jobs')).length;
    const rollback = await hangar(agent, 'rollback', 'echo');
    assert.deepEqual([rollback.code, rollback.stderr], [3, 'hangar: backend echo has no previous version to roll back to\n']);
    assert.equal((await json<JobView[]>(agent, 'jobs')).length, jobs, 'no job was started');
  });

  test('a name against the rules exits 6, said once', async () => {
    const rule = 'name may hold only letters, digits, ".", "_", "+" and "-", and must start with a letter or digit';
    for (const args of [['install', '../evil'], ['leftover', '../evil.backup', 'delete']]) {
      const bad = await hangar(agent, ...args);
      assert.deepEqual([bad.code, bad.stderr], [6, `hangar: ${rule}\n`], args.join(' '));
    }
  });

  test("a backend's own start timeout names an installed backend, and its reset one that has its own", async () => {
    const unknown = await hangar(agent, 'settings', 'start-timeout', '30', '--backend', 'nosuch');
    assert.deepEqual([unknown.code, unknown.stderr], [3, 'hangar: backend nosuch is not installed\n']);
    const reset = await hangar(agent, 'settings', 'start-timeout', 'default', '--backend', 'nosuch');
    assert.deepEqual([reset.code, reset.stderr], [3, 'hangar: backend nosuch has no start timeout of its own\n']);
    assert.doesNotMatch((await hangar(agent, 'settings')).stdout, /nosuch/);
  });

  test('options the node refuses are said in words, not by schema field', async () => {
    const reversed = await hangar(agent, 'settings', 'ports', '20-10');
    assert.deepEqual([reversed.code, reversed.stderr], [2, 'hangar: The port range is reversed: its first port must not be above its last\n']);
    const low = await hangar(agent, 'settings', 'ports', '20-30');
    assert.equal(low.stderr, 'hangar: Ports go from 1024 to 65535\n');
    const restarts = await hangar(agent, 'load', 'echo', 'm1', '--max-restarts', '0');
    assert.deepEqual([restarts.code, restarts.stderr], [2, 'hangar: max restarts must be at least 1\n']);
    const policy = await hangar(agent, 'load', 'echo', 'm1', '--restart', 'sometimes');
    assert.equal(policy.stderr, 'hangar: restart must be one of never, on-failure, always\n');
  });

  test('a failed install or upgrade says "failed" once, and what it failed to install', async () => {
    const install = await hangar(agent, 'install', 'broken');
    assert.equal(install.code, 1);
    assert.match(install.stderr, /^hangar: install broken 1\.0\.0 failed: .*; broken is not installed\n$/m);
    const [ours] = await json<{ name: string }[]>(agent, 'galleries');
    await writeGallery(gallery, [{ name: 'echo', uri: join(root, 'broken-src'), version: '2.0.0' }]);
    const upgrade = await hangar(agent, 'upgrade', `${ours!.name}@echo`);
    assert.equal(upgrade.code, 1);
    assert.match(upgrade.stderr, /^hangar: upgrade echo to 2\.0\.0 failed: .*; rolled back to 1\.0\.0\n$/m);
    assert.equal(upgrade.stderr.match(/failed/g)?.length, 1, upgrade.stderr);
  });
});
