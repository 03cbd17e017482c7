// The node's listings come from an index of the backends directory, not a fresh read per call. These tests change the
// directory from another process, as LocalAI or a person does, and check the very next listing shows it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BackendView } from '../../shared/types.ts';
import { serializeMetadata } from './install/metadata.ts';
import { LocalNode } from './node.ts';
import { runJob, startTestNode, tempDir } from './testing/fixtures.ts';

const local = 'local';
/** Longer than a stamp takes to vouch for a file (directory-read.ts). */
const RACY_WAIT_MS = 1100;

/** Runs a shell script in another process, in the backends directory. */
function outOfBand(backendsDir: string, script: string, input?: string): void {
  execFileSync('sh', ['-c', script], { cwd: backendsDir, ...(input !== undefined && { input }) });
}

function metadata(name: string, version: string): string {
  return serializeMetadata({ name, alias: null, metaBackendFor: null, galleryUrl: null, installedAt: '2025-01-01T00:00:00Z', version, uri: null, digest: null, sha256: null });
}

async function row(node: { backends(req: { node: string }): Promise<BackendView[]> }, name: string): Promise<BackendView | undefined> {
  return (await node.backends({ node: local })).find((b) => b.name === name);
}

test('a directory made, edited, made unrunnable, swapped and removed by another process shows in the next listing', async (t) => {
  const n = await startTestNode();
  t.after(() => n.close());
  const dir = n.node.backendsDir;
  await runJob(n.node, n.node.install({ node: local, name: 'echo' }));
  assert.equal((await n.node.backends({ node: local })).length, 1);
  assert.equal((await n.node.counts()).backends, 1);

  outOfBand(dir, 'mkdir other && printf "#!/bin/sh\\n" > other/run.sh && chmod 755 other/run.sh && cat > other/metadata.json', metadata('other', '1.0.0'));
  assert.equal((await row(n.node, 'other'))?.version, '1.0.0', 'a directory another process made');
  assert.equal((await n.node.counts()).backends, 2, 'the card counts it too');

  outOfBand(dir, 'cat > other/metadata.json', metadata('other', '1.0.1'));
  assert.equal((await row(n.node, 'other'))?.version, '1.0.1', 'metadata.json rewritten in place');

  outOfBand(dir, 'chmod a-x other/run.sh');
  assert.ok((await row(n.node, 'other'))?.localai.some((note) => /no execute bit/.test(note)), 'run.sh made unrunnable by chmod');

  outOfBand(dir, 'rm other/run.sh');
  assert.equal((await row(n.node, 'other'))?.broken, 'run.sh is missing', 'run.sh removed');

  // LocalAI's swap: the new tree written beside the live one, then two renames.
  outOfBand(
    dir,
    'mkdir other.install-tmp && printf "#!/bin/sh\\n" > other.install-tmp/run.sh && chmod 755 other.install-tmp/run.sh && cat > other.install-tmp/metadata.json && mv other other.install-backup && mv other.install-tmp other && rm -rf other.install-backup',
    metadata('other', '2.0.0'),
  );
  const swapped = await row(n.node, 'other');
  assert.equal(swapped?.version, '2.0.0', 'a swap by renames');
  assert.equal(swapped?.broken, null);
  assert.ok(!(await n.node.backends({ node: local })).some((b) => b.name.startsWith('other.')), 'no working directory is left listed');

  outOfBand(dir, 'rm -rf other');
  assert.equal(await row(n.node, 'other'), undefined, 'a directory another process removed');
  assert.equal((await n.node.counts()).backends, 1);

  outOfBand(dir, 'rm -rf echo');
  assert.equal((await n.node.gallery({ node: local })).find((e) => e.name === 'echo')?.installed, false, 'the gallery no longer says installed');
  assert.deepEqual(await n.node.backends({ node: local }), []);
});

test('an unchanged directory hands out the same views; a change of Hangar\'s own makes them again', async (t) => {
  const n = await startTestNode();
  t.after(() => n.close());
  await runJob(n.node, n.node.install({ node: local, name: 'echo' }));
  const [first, again] = [await n.node.backends({ node: local }), await n.node.backends({ node: local })];
  assert.equal(first, again, 'nothing changed: the same views');
  assert.equal(await n.node.gallery({ node: local }), await n.node.gallery({ node: local }));
  await n.publishEcho('1.0.1');
  await runJob(n.node, n.node.upgrade({ node: local, name: 'echo' }));
  const upgraded = await n.node.backends({ node: local });
  assert.notEqual(upgraded, first);
  assert.equal(upgraded[0]?.version, '1.0.1');
  assert.equal(upgraded[0]?.previous?.version, '1.0.0', 'the rollback tree is read again too');
  outOfBand(join(n.node.backendsDir, '.hangar', 'previous'), 'rm -rf echo');
  assert.equal((await row(n.node, 'echo'))?.previous, null, 'a rollback tree removed by another process');
});

test('a change makes again only the views of the rows it changed, as a whole listing shows them', async (t) => {
  const n = await startTestNode();
  t.after(() => n.close());
  const dir = n.node.backendsDir;
  for (const name of ['kept', 'edited', 'gone']) outOfBand(dir, `mkdir ${name} && printf "#!/bin/sh\\n" > ${name}/run.sh && chmod 755 ${name}/run.sh && cat > ${name}/metadata.json`, metadata(name, '1.0.0'));
  outOfBand(dir, 'mkdir gone.install-backup && cp -p gone/* gone.install-backup/');
  const first = await n.node.backends({ node: local });
  assert.equal(first.find((b) => b.name === 'gone.install-backup')?.leftover?.restorable, false);
  outOfBand(dir, 'cat > edited/metadata.json && rm -rf gone', metadata('edited', '1.0.1'));
  const next = await n.node.backends({ node: local });
  const byName = (list: BackendView[], name: string) => list.find((b) => b.name === name);
  assert.equal(byName(next, 'kept'), byName(first, 'kept'), 'an unchanged row keeps its view');
  assert.equal(byName(next, 'edited')?.version, '1.0.1');
  assert.equal(byName(next, 'gone'), undefined);
  // A row whose own directory did not change, while what it shows did: the backup can now be put back.
  assert.equal(byName(next, 'gone.install-backup')?.leftover?.restorable, true);
  const whole = new LocalNode({ home: join(n.root, 'home'), galleries: [{ name: 'test', location: n.gallery }], runtimeEnv: {} });
  await whole.start();
  t.after(() => whole.close({ stopBackends: false }));
  assert.deepEqual(next, await whole.backends({ node: local }));
});

/** A node's first listing on `home`, and the node closed (which writes the listing kept for the next start). */
async function firstListing(home: string): Promise<BackendView[]> {
  const node = new LocalNode({ home, galleries: [], runtimeEnv: {}, capability: 'default' });
  await node.start();
  try {
    return await node.backends({ node: local });
  } finally {
    await node.close({ stopBackends: true });
  }
}

function version(list: BackendView[], name: string): string | null | undefined {
  return list.find((b) => b.name === name)?.version;
}

test('the listing kept from the last run is believed only where a directory is as it was read', async (t) => {
  const root = await tempDir('kept-listing');
  t.after(() => rm(root, { recursive: true, force: true }));
  const home = join(root, 'home');
  const dir = join(home, 'backends');
  await mkdir(dir, { recursive: true });
  const names = ['edited', 'chmodded', 'removed', 'swapped', 'untouched'];
  for (const name of names) outOfBand(dir, `mkdir ${name} && printf "#!/bin/sh\\n" > ${name}/run.sh && chmod 755 ${name}/run.sh && cat > ${name}/metadata.json`, metadata(name, '1.0.0'));
  outOfBand(dir, 'mkdir fresh && cat > fresh/metadata.json', metadata('fresh', '1.0.0'));
  // A file changed a moment before it is read may change again unseen within the same tick of the clock.
  await sleep(RACY_WAIT_MS);
  outOfBand(dir, 'cat > fresh/metadata.json', metadata('fresh', '1.0.1'));
  assert.equal((await firstListing(home)).length, names.length + 1);
  const keptFile = join(home, 'state', 'backends-listing.json');
  const kept = JSON.parse(await readFile(keptFile, 'utf8')) as { entries: [string, string, { metadata: { version: string } }][] };
  assert.deepEqual(kept.entries.map(([name]) => name).sort(), names.sort(), 'a directory changed a moment before it was read is not kept');

  // What the next start believes of a directory whose stamp still matches is the kept entry, not a read.
  kept.entries.find(([name]) => name === 'untouched')![2].metadata.version = '9.9.9';
  await writeFile(keptFile, JSON.stringify(kept));
  // Changed while no Hangar ran, each keeping its file sizes.
  outOfBand(dir, 'cat > edited/metadata.json', metadata('edited', '1.0.1'));
  outOfBand(dir, 'chmod a-x chmodded/run.sh && rm -rf removed && mkdir added && printf "#!/bin/sh\\n" > added/run.sh && chmod 755 added/run.sh');
  outOfBand(
    dir,
    'mkdir swapped.install-tmp && cp -p swapped/run.sh swapped.install-tmp/ && cat > swapped.install-tmp/metadata.json && mv swapped swapped.install-backup && mv swapped.install-tmp swapped && rm -rf swapped.install-backup',
    metadata('swapped', '2.0.0'),
  );
  // Past the moment where any change would be read again anyway: only the stamps can tell these apart.
  await sleep(RACY_WAIT_MS);
  const next = await firstListing(home);
  assert.equal(version(next, 'edited'), '1.0.1', 'metadata.json rewritten in place');
  assert.ok(next.find((b) => b.name === 'chmodded')?.localai.some((note) => /no execute bit/.test(note)), 'run.sh made unrunnable by chmod');
  assert.equal(version(next, 'removed'), undefined, 'a directory removed');
  assert.equal(next.find((b) => b.name === 'added')?.broken, null, 'a directory added');
  assert.equal(version(next, 'swapped'), '2.0.0', "LocalAI's swap by renames");
  assert.equal(version(next, 'fresh'), '1.0.1');
  assert.equal(version(next, 'untouched'), '9.9.9', 'the kept entry, believed');
});
