// A snapshot brought up to date from the last one (only the directories that changed listed again) must be exactly
// what a whole read of the directory says, after Hangar's own changes and after changes by another process alike.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { BackendStore } from './install/store.ts';
import { DirectorySnapshot, Snapshots } from './localai-rows.ts';
import { tempDir } from './testing/fixtures.ts';
import { buildMetadata, goMetadataJson, metaMetadata, writeLocalAiDir } from './testing/localai-layout.ts';

const CAPABILITY = 'default';

/** Runs a shell script in another process, in the backends directory, as LocalAI or a person would change it. */
function outOfBand(backendsDir: string, script: string): void {
  execFileSync('sh', ['-c', script], { cwd: backendsDir });
}

const byKey = <V>(entries: Iterable<[string, V]>) => [...entries].sort(([a], [b]) => (a < b ? -1 : 1));

/** Everything a snapshot answers, in a form deepEqual compares. */
function answers(snapshot: DirectorySnapshot) {
  const { error, backends, names, references, dependents } = snapshot.listing;
  const rows = snapshot.rows();
  const target = (name: string) => {
    try {
      return snapshot.target(name);
    } catch (error) {
      return (error as Error).message;
    }
  };
  return {
    listing: { error, backends: byKey(backends), names: byKey(names), references: byKey(references), dependents: byKey(dependents) },
    rows,
    each: rows.map((r) => ({ name: r.name, target: target(r.name), upgradeSkip: snapshot.upgradeSkip(r.name), keysRunning: snapshot.keysRunning(r.name), metasOf: snapshot.metasOf(r.name) })),
  };
}

test('a snapshot made from the last one answers as a whole read, through plain changes, metas, aliases and errors', async (t) => {
  const root = await tempDir('snapshots');
  t.after(() => rm(root, { recursive: true, force: true }));
  const backends = join(root, 'backends');
  await mkdir(backends);
  const plain = (i: number) => `plain-${String(i).padStart(2, '0')}`;
  for (let i = 0; i < 30; i++) await writeLocalAiDir(backends, plain(i), { runSh: 'script', metadata: buildMetadata(plain(i)) });
  await writeLocalAiDir(backends, 'cpu-llama', { runSh: 'script', metadata: buildMetadata('cpu-llama') });
  await writeLocalAiDir(backends, 'llama', { runSh: 'none', metadata: metaMetadata('llama', 'cpu-llama', '1.0') });
  for (const build of ['x-cpu', 'x-cuda']) await writeLocalAiDir(backends, build, { runSh: 'script', metadata: buildMetadata(build, { alias: 'x' }) });

  const store = new BackendStore(backends);
  store.watch();
  t.after(() => store.unwatch());
  const snapshots = new Snapshots(store, CAPABILITY);
  let last = await snapshots.current();
  assert.deepEqual(answers(last), answers(await DirectorySnapshot.read(new BackendStore(backends), CAPABILITY)));

  /** After `change`, the next snapshot: from the last one's listing (`fromLast`) or a whole listing, as a whole read. */
  const step = async (what: string, fromLast: boolean, change: () => unknown) => {
    await change();
    const next = await snapshots.current();
    assert.notEqual(next, last, `${what}: a new snapshot`);
    assert.equal(next.listing.references === last.listing.references, fromLast, `${what}: ${fromLast ? 'made from the last listing' : 'listed whole'}`);
    assert.deepEqual(answers(next), answers(await DirectorySnapshot.read(new BackendStore(backends), CAPABILITY)), what);
    last = next;
  };
  const json = (name: string, version: string) => goMetadataJson({ ...buildMetadata(name), version }).replaceAll("'", "'\\''");

  await step("Hangar's delete of a plain backend", true, () => store.remove(plain(3)));
  await step('a plain backend removed by another process', true, () => outOfBand(backends, `rm -rf ${plain(4)}`));
  await step('a plain backend made by another process', true, () =>
    outOfBand(backends, `mkdir new-one && printf '#!/bin/sh\\n' > new-one/run.sh && chmod 755 new-one/run.sh && printf '%s' '${json('new-one', '1.0')}' > new-one/metadata.json`),
  );
  await step('run.sh made unrunnable by chmod', true, () => outOfBand(backends, `chmod a-x ${plain(5)}/run.sh`));
  await step('run.sh removed', true, () => outOfBand(backends, `rm ${plain(6)}/run.sh`));
  await step('a plain backend renamed', true, () => outOfBand(backends, `mv ${plain(10)} ${plain(10)}b`));
  await step("LocalAI's swap of a plain backend: its leftovers come and go", true, () =>
    outOfBand(
      backends,
      `P=${plain(9)}; mkdir $P.install-tmp && printf '#!/bin/sh\\n' > $P.install-tmp/run.sh && chmod 755 $P.install-tmp/run.sh && printf '%s' '${json(plain(9), '2.0')}' > $P.install-tmp/metadata.json && mv $P $P.install-backup && mv $P.install-tmp $P && rm -rf $P.install-backup`,
    ),
  );
  await step('a metadata.json LocalAI cannot read', false, () => outOfBand(backends, `printf '{' > ${plain(7)}/metadata.json`));
  await step('the same metadata.json mended', false, () => outOfBand(backends, `printf '%s' '${json(plain(7), '1.0')}' > ${plain(7)}/metadata.json`));
  await step("a meta's build removed", false, () => outOfBand(backends, 'rm -rf cpu-llama'));
  await step('a meta made for a plain backend', false, () =>
    outOfBand(backends, `mkdir whisper && printf '%s' '${goMetadataJson(metaMetadata('whisper', plain(8), '1.0'))}' > whisper/metadata.json`),
  );
  assert.deepEqual(
    last.metasOf(plain(8)).map((b) => b.name),
    ['whisper'],
  );
  await step("Hangar's delete of a meta's build", false, () => store.remove(plain(8)));
  await step('another member of an alias group', false, () => writeLocalAiDir(backends, 'x-vulkan', { runSh: 'script', metadata: buildMetadata('x-vulkan', { alias: 'x' }) }));
  await step('a plain backend after all that', true, () => store.remove(plain(12)));
  await step('changes the store read between two snapshots', true, async () => {
    await store.remove(plain(13));
    assert.equal(await store.get(plain(13)), null);
    outOfBand(backends, `rm -rf ${plain(14)}`);
    assert.equal(await store.get(plain(14)), null);
  });

  outOfBand(backends, `mkdir -p .hangar/previous/gone && printf '%s' '${json('gone', '0.9')}' > .hangar/previous/gone/metadata.json`);
  const kept = await snapshots.current();
  assert.deepEqual(
    kept.kept.map((k) => k.name),
    ['gone'],
    'a kept tree appeared',
  );
  assert.equal(kept.listing, last.listing, 'with no directory changed, the same listing');
  assert.deepEqual(answers(kept), answers(await DirectorySnapshot.read(new BackendStore(backends), CAPABILITY)));
});
