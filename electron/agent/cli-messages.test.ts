// What the real `hangar` CLI says, against a real agent that reads the galleries of its settings: each outcome in
// its own words, a gallery checked before it is added, one table of processes across nodes, an ended process's
// last output labelled as such, and one cwd verdict per process in ps and scan.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chmod, chown, mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { iecBytes } from '../../shared/progress.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { cliRunsAsProcesses, hangar, json, startAgent, until, type Agent } from './test-agent.ts';

cliRunsAsProcesses();

const STARTER_ECHO = 'dist/backends/echo';
/** Tests run as root, who reads every file: a file a node cannot read is one its agent run by nobody cannot. */
const NOBODY = 65534;

async function filesBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}

describe('what the CLI says', () => {
  let root: string;
  let agent: Agent;
  let notFound: Server;
  let notFoundUrl: string;

  before(async () => {
    root = await tempDir('cli-messages');
    agent = await startAgent(join(root, 'home'), null);
    notFound = createServer((_req, res) => res.writeHead(404).end('no such gallery'));
    await new Promise<void>((resolve) => notFound.listen(0, '127.0.0.1', resolve));
    notFoundUrl = `http://127.0.0.1:${(notFound.address() as AddressInfo).port}/index.yaml`;
  });

  after(async () => {
    agent?.child.kill('SIGKILL');
    notFound?.close();
    await rm(root, { recursive: true, force: true });
  });

  test('galleries add refuses a URL that answers 404, or a file that is not there, unless --force', async () => {
    const refused = await hangar(agent, 'galleries', 'add', notFoundUrl, 'gone');
    assert.equal(refused.code, 6);
    assert.equal(refused.stderr, `hangar: ${notFoundUrl} answers 404 Not Found: the gallery was not added (--force adds it anyway)\n`);
    const missing = await hangar(agent, 'galleries', 'add', join(root, 'nothing.yaml'));
    assert.equal(missing.code, 6);
    assert.equal(missing.stderr, `hangar: ${join(root, 'nothing.yaml')} does not exist: the gallery was not added (--force adds it anyway)\n`);
    assert.deepEqual((await json<{ name: string }[]>(agent, 'galleries')).map((g) => g.name), ['starter']);

    const forced = await hangar(agent, 'galleries', 'add', notFoundUrl, 'gone', '--force');
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(forced.stdout, /^gone +http:\S+ +yes$/m);
    assert.equal((await hangar(agent, 'galleries', 'remove', 'gone')).code, 0);
  });

  test('galleries add refuses a file the node cannot read, and says why, unless --force', async (t) => {
    await chmod(root, 0o755);
    const locked = join(root, 'locked.yaml');
    await writeFile(locked, '- name: a\n', { mode: 0o600 });
    const home = join(root, 'nobody-home');
    await mkdir(home);
    await chown(home, NOBODY, NOBODY);
    const nobody = await startAgent(home, null, [], process.env, undefined, { uid: NOBODY, gid: NOBODY });
    t.after(() => nobody.child.kill('SIGKILL'));
    const refused = await hangar(nobody, 'galleries', 'add', locked, 'locked');
    assert.deepEqual([refused.code, refused.stderr], [6, `hangar: ${locked} cannot be read: permission denied: the gallery was not added (--force adds it anyway)\n`]);
    assert.deepEqual((await json<{ name: string }[]>(nobody, 'galleries')).map((g) => g.name), ['starter']);

    const forced = await hangar(nobody, 'galleries', 'add', locked, 'locked', '--force');
    assert.equal(forced.code, 0, forced.stderr);
    assert.deepEqual((await json<{ name: string }[]>(nobody, 'galleries')).map((g) => g.name), ['starter', 'locked']);
  });

  test('galleries add refuses a location whose text is not a gallery index, unless --force', async () => {
    const broken = join(root, 'bad.yaml');
    await writeFile(broken, '- name: a\n  tags: [x, y\n- name: b\n');
    const passwd = join(root, 'passwd');
    await writeFile(passwd, 'root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n');
    const page = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Not here</body></html>\n'));
    await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
    after(() => page.close());
    const pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}/index.yaml`;

    const invalid = await hangar(agent, 'galleries', 'add', broken);
    assert.equal(invalid.code, 6);
    assert.match(invalid.stderr, new RegExp(`^hangar: gallery "${broken}": invalid YAML: .* at line 3, column 1: the gallery was not added \\(--force adds it anyway\\)\n$`));
    for (const location of [passwd, pageUrl]) {
      const refused = await hangar(agent, 'galleries', 'add', location);
      assert.equal(refused.code, 6);
      assert.equal(refused.stderr, `hangar: gallery "${location}": the index must be a YAML list of backends: the gallery was not added (--force adds it anyway)\n`);
    }
    assert.deepEqual((await json<{ name: string }[]>(agent, 'galleries')).map((g) => g.name), ['starter']);

    const forced = await hangar(agent, 'galleries', 'add', broken, '--force');
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal((await hangar(agent, 'galleries', 'remove', 'bad')).code, 0);
  });

  test('galleries add says why a location cannot be read: a scheme it does not support (--force or not), nothing listening, a blocked port', async () => {
    const ftp = await hangar(agent, 'galleries', 'add', 'ftp://x/y');
    assert.equal(ftp.code, 6);
    assert.equal(ftp.stderr, 'hangar: gallery location "ftp://x/y": only local paths, file:// and http(s):// are supported\n');
    const forced = await hangar(agent, 'galleries', 'add', 'ftp://x/y', '--force');
    assert.deepEqual([forced.code, forced.stderr], [ftp.code, ftp.stderr], '--force skips only the look at what the location holds');
    const malformed = [
      ['http://[::1', 'is not a valid URL'],
      ['file://files.example/share/index.yaml', 'is not a file on this machine: file URL host must be "localhost" or empty on linux'],
      ['file:///srv/a%2fb.yaml', 'is not a file on this machine: file URL path must not include encoded / characters'],
      ['file:///srv/a%00b.yaml', 'holds a NUL character'],
    ];
    for (const [location, why] of malformed) {
      for (const force of [[], ['--force']]) {
        const refused = await hangar(agent, 'galleries', 'add', location!, ...force);
        assert.deepEqual([refused.code, refused.stderr], [6, `hangar: gallery location "${location}" ${why}\n`], location);
      }
    }
    const gone = createServer();
    await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve));
    const goneUrl = `http://127.0.0.1:${(gone.address() as AddressInfo).port}/index.yaml`;
    await new Promise((resolve) => gone.close(resolve));
    const closed = await hangar(agent, 'galleries', 'add', goneUrl);
    assert.equal(closed.code, 6);
    assert.equal(closed.stderr, `hangar: ${goneUrl} cannot be reached: nothing listens at ${new URL(goneUrl).host} (connection refused): the gallery was not added (--force adds it anyway)\n`);
    const blocked = await hangar(agent, 'galleries', 'add', 'http://127.0.0.1:9/index.yaml');
    assert.equal(blocked.code, 6);
    assert.equal(blocked.stderr, 'hangar: http://127.0.0.1:9/index.yaml cannot be reached: fetch never connects to 127.0.0.1:9: the Fetch standard blocks that port: the gallery was not added (--force adds it anyway)\n');
    assert.deepEqual((await json<{ name: string }[]>(agent, 'galleries')).map((g) => g.name), ['starter']);
  });

  test('a gallery added with --force that cannot be fetched is named once in the warning', async () => {
    const gone = createServer();
    await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve));
    const goneUrl = `http://127.0.0.1:${(gone.address() as AddressInfo).port}/index.yaml`;
    await new Promise((resolve) => gone.close(resolve));
    assert.equal((await hangar(agent, 'galleries', 'add', goneUrl, 'down', '--force')).code, 0);
    const listed = await hangar(agent, 'gallery');
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal(listed.stderr, `hangar: warning: gallery "down": cannot fetch ${goneUrl}: nothing listens at ${new URL(goneUrl).host} (connection refused)\n`);
    assert.equal((await hangar(agent, 'galleries', 'remove', 'down')).code, 0);
  });

  test('galleries add starter brings the built-in gallery back after it was removed', async () => {
    assert.equal((await hangar(agent, 'galleries', 'remove', 'starter')).code, 0);
    const back = await hangar(agent, 'galleries', 'add', 'starter');
    assert.equal(back.code, 0, back.stderr);
    assert.deepEqual(await json(agent, 'galleries'), [{ name: 'starter', location: 'starter', enabled: true }]);
    await until('the starter gallery read again', async () => ((await hangar(agent, 'gallery')).stdout.match(/^echo +starter /m) ? true : undefined), 10_000);
  });

  test('installing a folder shows its whole size before it moves on; what needs nothing done says what it found', async () => {
    const install = await hangar(agent, 'install', 'echo');
    assert.equal(install.code, 0, install.stderr);
    const fetched = install.stderr.split('\n').filter((line) => line.startsWith('install echo: fetching')).at(-1);
    assert.equal(fetched, `install echo: fetching ${iecBytes(await filesBytes(STARTER_ECHO))}`);
    assert.equal(install.stdout, 'installed echo 1.0.0\n');
    assert.doesNotMatch(install.stderr, /done/, 'how it ended is said once, on stdout');

    const upToDate = await hangar(agent, 'upgrade', 'echo');
    assert.equal(upToDate.code, 0, upToDate.stderr);
    assert.equal(upToDate.stdout, 'upgrade echo: up to date\n');
    const installed = await hangar(agent, 'install', 'echo');
    assert.equal(installed.stdout, 'install echo: already installed\n');
    const nothing = await hangar(agent, 'rollback', 'nosuch');
    assert.equal(nothing.code, 3);
    assert.match(nothing.stderr, /^hangar: backend nosuch is not installed\n$/m);
    assert.doesNotMatch(nothing.stderr, /swapping|previous version/);
  });

  test("another gallery's entry of an installed name is another source, not an upgrade of it", async () => {
    const index = join(root, 'index.yaml');
    await writeGallery(index, [{ name: 'echo', uri: await echoSource(root, '0.9.0'), version: '0.9.0' }]);
    assert.equal((await hangar(agent, 'galleries', 'add', index, 'mine')).code, 0);
    const listed = await until('the second gallery read', async () => {
      const out = (await hangar(agent, 'gallery')).stdout;
      return out.includes('mine') ? out : undefined;
    }, 10_000);
    assert.match(listed, /^echo +starter +1\.0\.0 +installed/m);
    assert.match(listed, /^echo +mine +0\.9\.0 +another source \(echo follows starter\)/m);
    const [echo] = await json<{ version: string; upgradable: boolean }[]>(agent, 'ls');
    assert.deepEqual([echo!.version, echo!.upgradable], ['1.0.0', false]);
    const entries = await json<{ name: string; gallery: string; installed: boolean; upgradable: boolean }[]>(agent, 'gallery');
    assert.deepEqual(
      entries.filter((e) => e.name === 'echo').map((e) => [e.gallery, e.installed, e.upgradable]),
      [['starter', true, false], ['mine', false, false]],
      'only the entry echo follows is installed; the other is never upgradable, even at another version',
    );
    assert.equal((await hangar(agent, 'galleries', 'remove', 'mine')).code, 0);
  });

  test('ps --on all is one table across nodes', async () => {
    await json(agent, 'load', 'echo', 'm1');
    const all = await hangar(agent, 'ps', '--on', 'all');
    assert.equal(all.code, 0, all.stderr);
    assert.match(all.stdout, /^NODE +MODEL +BACKEND +PID +PORT +STATE/m);
    assert.match(all.stdout, /^This machine +m1 +echo +\d+ +\d+ +ready/m);
    const [self] = await json<{ status: string; processes: { model: string }[] }[]>(agent, 'ps', '--on', 'all');
    assert.deepEqual([self!.status, self!.processes.map((p) => p.model)], ['online', ['m1']]);
  });

  test("a crashed process says how it ended, and its last line is labelled as its last output", async () => {
    const { pid } = await json<{ pid: number }>(agent, 'load', 'echo', 'k1', '--restart', 'never');
    process.kill(pid, 'SIGKILL');
    const ps = await until('k1 crashed', async () => {
      const out = (await hangar(agent, 'ps')).stdout;
      return /^k1 .* crashed /m.test(out) ? out : undefined;
    }, 10_000);
    assert.match(ps, /^k1 .* killed by SIGKILL at \S+; last output: echo: listening on 127\.0\.0\.1:\d+$/m);
    assert.equal((await hangar(agent, 'stop', 'k1')).code, 0);
  });

  test("a process whose directory was moved aside is stale in ps and in scan, with the supervisor's reason", async () => {
    const { pid } = (await json<{ model: string; pid: number }[]>(agent, 'ps')).find((p) => p.model === 'm1')!;
    const live = join(agent.home, 'backends', 'echo');
    // Moved aside under a name no installer uses: only the directory's identity tells it is not the live one.
    await rename(live, `${live}.old`);
    await rename(await echoSource(root, '1.0.1'), live);
    const [m1] = await until('m1 stale', async () => {
      const rows = await json<{ cwd: string; cwdReason: string }[]>(agent, 'ps');
      return rows[0]?.cwd === 'stale' ? rows : undefined;
    }, 10_000);
    const scan = await json<{ pid: number; status: string; reason: string }[]>(agent, 'scan');
    assert.deepEqual(scan.find((s) => s.pid === pid), { ...scan.find((s) => s.pid === pid), status: 'stale', reason: m1!.cwdReason });
    assert.match((await hangar(agent, 'scan')).stdout, new RegExp(`^${pid} .* stale +${m1!.cwdReason.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} `, 'm'));
  });
});
