// A gallery behind HTTP basic auth, its user and password in its URL (as LocalAI's galleries take them): the node
// sends them as basic auth, to that origin only, keeps the password in a file only its owner reads, and never shows it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { BUILT_ECHO, tempDir } from '../core/testing/fixtures.ts';
import { serve } from '../core/install/testdata/fixtures.ts';
import { cli, hangar, read, startAgent, withStdin, type Agent } from './test-agent.ts';

const PASSWORD = 'p@ss:w/rd';
const ENCODED = encodeURIComponent(PASSWORD);
const EXPECTED = `Basic ${Buffer.from(`ann:${PASSWORD}`).toString('base64')}`;

let root: string;
let agent: Agent;
let gallery: Awaited<ReturnType<typeof serve>>;
let elsewhere: Awaited<ReturnType<typeof serve>>;
/** The Authorization header each request came with, by path: what reached which server. */
const seen: { server: string; path: string; authorization: string | undefined }[] = [];
let galleryUrl: string;

before(async () => {
  root = await tempDir('gallery-password');
  const tarball = join(root, 'echo.tar.gz');
  await promisify(execFile)('tar', ['-czf', tarball, '-C', BUILT_ECHO, '.']);
  const index = stringify([
    { name: 'echo', uri: 'echo.tar.gz', version: '1.0.0' },
    { name: 'gone', uri: 'gone.tar.gz', version: '1.0.0' },
  ]);
  elsewhere = await serve((req, res) => {
    seen.push({ server: 'elsewhere', path: req.url ?? '', authorization: req.headers.authorization });
    res.writeHead(200, { 'content-type': 'text/yaml' }).end(index);
  });
  gallery = await serve((req, res) => {
    seen.push({ server: 'gallery', path: req.url ?? '', authorization: req.headers.authorization });
    if (req.headers.authorization !== EXPECTED) return void res.writeHead(401, { 'www-authenticate': 'Basic realm="team"' }).end();
    if (req.url === '/index.yaml') return void res.writeHead(200, { 'content-type': 'text/yaml' }).end(index);
    if (req.url === '/moved/index.yaml') return void res.writeHead(302, { location: `${elsewhere.url}/index.yaml` }).end();
    if (req.url === '/echo.tar.gz') return void readFile(tarball).then((data) => res.writeHead(200).end(data));
    res.writeHead(404).end();
  });
  galleryUrl = gallery.url.replace('http://', `http://ann:${ENCODED}@`) + '/index.yaml';
  agent = await startAgent(join(root, 'home'), null);
});

after(async () => {
  agent.child.kill('SIGTERM');
  await once(agent.child, 'exit');
  await rm(root, { recursive: true, force: true });
  await gallery.close();
  await elsewhere.close();
});

const shown = () => galleryUrl.replace(ENCODED, '***');

test('a password on the command line is refused, for galleries add and agent --gallery, before anything is read', async () => {
  const before = seen.length;
  const add = await hangar(agent, 'galleries', 'add', galleryUrl, 'team');
  assert.equal(add.code, 2, add.stderr);
  assert.match(add.stderr, /readable by every user of this machine.*hangar galleries add - \[NAME\]/);
  assert.doesNotMatch(add.stderr, /p%40ss|p@ss/);
  const started = await cli('agent', '--home', join(root, 'other-home'), '--listen', '127.0.0.1:0', '--gallery', `team=${galleryUrl}`);
  assert.equal(started.code, 2, started.stderr);
  assert.match(started.stderr, /--gallery: .*holds a password.*hangar galleries add -/);
  assert.equal(seen.length, before, 'nothing was fetched');
});

test('given on stdin, the gallery is read with basic auth, listed with its password hidden, and kept for its owner only', async () => {
  const wrong = await withStdin(agent, galleryUrl.replace(ENCODED, 'nope'), 'galleries', 'add', '-', 'team');
  assert.equal(wrong.code, 6, wrong.stderr);
  assert.match(wrong.stderr, /http:\/\/ann:\*\*\*@127\.0\.0\.1:\d+\/index\.yaml answers 401 Unauthorized/);
  assert.doesNotMatch(wrong.stderr, /nope/);

  const added = await withStdin(agent, `${galleryUrl}\n`, 'galleries', 'add', '-', 'team');
  assert.equal(added.code, 0, added.stderr);
  assert.ok(added.stdout.includes(shown()), added.stdout);
  assert.doesNotMatch(added.stdout + added.stderr, /p%40ss|p@ss/);
  assert.ok(seen.some((s) => s.path === '/index.yaml' && s.authorization === EXPECTED));

  const file = join(agent.home, 'state', 'settings.json');
  assert.equal((await stat(file)).mode & 0o777, 0o600);
  assert.ok((await readFile(file, 'utf8')).includes(galleryUrl));
});

test('the backend a relative uri names comes from the same origin with the same credentials; nothing the node says shows the password', async () => {
  const installed = await hangar(agent, 'install', 'team@echo');
  assert.equal(installed.code, 0, installed.stderr);
  assert.ok(seen.some((s) => s.path === '/echo.tar.gz' && s.authorization === EXPECTED), 'the archive was fetched with basic auth');
  const metadata = JSON.parse(await readFile(join(agent.home, 'backends', 'echo', 'metadata.json'), 'utf8')) as { gallery_url?: string };
  assert.equal(metadata.gallery_url, shown(), 'LocalAI only records and reports gallery_url: the password stays out of it');
  const gone = await hangar(agent, 'install', 'team@gone');
  assert.notEqual(gone.code, 0);
  assert.match(gone.stderr, /http:\/\/ann:\*\*\*@127\.0\.0\.1:\d+\/gone\.tar\.gz answered HTTP 404/);
  const said = await Promise.all([['galleries', '--json'], ['settings', '--json'], ['ls', '--json'], ['gallery', '--json'], ['info', '--json']].map((args) => hangar(agent, ...args)));
  for (const { stdout, stderr } of [...said, gone]) assert.doesNotMatch(stdout + stderr, /p%40ss|p@ss/);
  assert.doesNotMatch(JSON.stringify(await read(agent, 'jobs')), /p%40ss|p@ss/);
});

test('a change sent back with the hidden location keeps the password', async () => {
  const disabled = await hangar(agent, 'galleries', 'disable', 'starter');
  assert.equal(disabled.code, 0, disabled.stderr);
  const kept = JSON.parse(await readFile(join(agent.home, 'state', 'settings.json'), 'utf8')) as { galleries: { name: string; location: string }[] };
  assert.equal(kept.galleries.find((g) => g.name === 'team')?.location, galleryUrl);
  const refreshed = await hangar(agent, 'gallery', '--refresh', '--json');
  assert.equal(refreshed.code, 0, refreshed.stderr);
  assert.ok((JSON.parse(refreshed.stdout) as { name: string }[]).some((e) => e.name === 'echo'));
});

test('a redirect to another origin does not carry the credentials', async () => {
  const moved = galleryUrl.replace('/index.yaml', '/moved/index.yaml');
  const added = await withStdin(agent, moved, 'galleries', 'add', '-', 'moved');
  assert.equal(added.code, 0, added.stderr);
  const there = seen.filter((s) => s.server === 'elsewhere');
  assert.ok(there.length > 0, 'the redirect was followed');
  assert.deepEqual(there.map((s) => s.authorization), there.map(() => undefined));
});
