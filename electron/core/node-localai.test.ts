// Hangar and LocalAI on one backends directory: every case where the two could disagree, with the directory written
// the way LocalAI writes it (testing/localai-layout.ts) and, for alias groups and the -development guard, LocalAI's
// real gallery index on every capability LocalAI reports. The expectations come from LocalAI's code:
// core/gallery/backends.go ListSystemBackends (alias groups are applied after meta rows), core/gallery/upgrade.go
// CheckUpgradesAgainst (X is not offered while X-development is installed), pkg/model/process.go startProcess
// (run.sh with no execute bit is made 0700), isBackendRunnable (a meta whose build is gone is not runnable).
import assert from 'node:assert/strict';
import { chmod, mkdir, readFile, readdir, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import type { BackendView } from '../../shared/types.ts';
import { Galleries, isEntryCompatible, isMeta, resolveMetaKey, type GalleryEntry } from './gallery/index.ts';
import { BackendStore } from './install/store.ts';
import { DirectorySnapshot } from './localai-rows.ts';
import { LocalNode } from './node.ts';
import { buildMetadata, metaMetadata, writeLocalAiDir, type RunShKind } from './testing/localai-layout.ts';
import { echoSource, runJob, startTestNode, tempDir, writeGallery, type TestNode } from './testing/fixtures.ts';

const local = 'local';
const fixture = fileURLToPath(new URL('../../bench/fixtures/localai-backend-index.yaml', import.meta.url));
const CAPABILITIES = [
  'default', 'nvidia', 'nvidia-cuda-12', 'nvidia-cuda-13', 'nvidia-l4t', 'nvidia-l4t-cuda-12', 'nvidia-l4t-cuda-13',
  'amd', 'intel', 'vulkan', 'metal', 'darwin-x86', 'disable',
];

let index: Map<string, GalleryEntry>;
before(async () => {
  const galleries = new Galleries({ specs: [{ name: 'localai', location: fixture }] });
  index = new Map((await galleries.entries()).map((e) => [e.name, e]));
  galleries.close();
});

/**
 * What LocalAI's InstallBackendFromGallery leaves for meta `name` on `capability` (or with the build `pick` picked in
 * Hangar): the build's directory, then the meta's. Returns the build, or null when LocalAI installs nothing.
 */
async function installAsLocalAi(backendsDir: string, name: string, capability: string, runSh: RunShKind, pick?: string): Promise<string | null> {
  const meta = index.get(name)!;
  const key = pick ?? resolveMetaKey(meta.capabilities!, capability)?.key;
  const build = key === undefined ? undefined : index.get(meta.capabilities![key]!);
  if (!build || !isEntryCompatible(build, capability)) return null;
  await writeLocalAiDir(backendsDir, build.name, { runSh, metadata: buildMetadata(build.name, build) });
  await writeLocalAiDir(backendsDir, name, { runSh: 'none', metadata: metaMetadata(name, build.name, build.version) });
  return build.name;
}

async function localaiNode(root: string, capability: string): Promise<LocalNode> {
  const node = new LocalNode({ home: join(root, 'home'), galleries: [{ name: 'localai', location: fixture }], runtimeEnv: { HANGAR_NODE: process.execPath }, capability });
  await node.start();
  return node;
}

/** Loads `model` on `backend` and returns the process that serves it. */
async function loadOn(node: LocalNode, backend: string, model: string): Promise<{ backend: string; dir: string }> {
  await node.load({ node: local, backend, model });
  const process = (await node.processes({ node: local })).find((p) => p.model === model);
  assert.ok(process, `a process for ${model}`);
  return process;
}

const rowOf = async (node: LocalNode, name: string): Promise<BackendView> => {
  const row = (await node.backends({ node: local })).find((b) => b.name === name);
  assert.ok(row, `a row for ${name}`);
  return row;
};

describe('1. alias groups win over a meta backend\'s own build, as in LocalAI (real index, real loads)', () => {
  // [capability, the metas installed, the name loaded, the build LocalAI runs for it, the meta's own build, a pick]
  const table: [string, string[], string, string, string, string?][] = [
    ['metal', ['local-store', 'local-store-development'], 'local-store', 'metal-local-store-development', 'metal-local-store'],
    ['metal', ['valkey-store', 'valkey-store-development'], 'valkey-store', 'metal-valkey-store-development', 'metal-valkey-store'],
    ['nvidia-l4t-cuda-12', ['diffusers', 'diffusers-development'], 'diffusers', 'cpu-diffusers-development', 'nvidia-l4t-diffusers'],
    ['nvidia-l4t-cuda-12', ['kokoro', 'kokoro-development'], 'kokoro', 'cpu-kokoro-development', 'nvidia-l4t-kokoro'],
    ['nvidia-l4t-cuda-12', ['rfdetr', 'rfdetr-development'], 'rfdetr', 'cpu-rfdetr-development', 'nvidia-l4t-arm64-rfdetr'],
    ['nvidia-l4t-cuda-12', ['whisperx', 'whisperx-development'], 'whisperx', 'cpu-whisperx-development', 'nvidia-l4t-arm64-whisperx'],
    ['default', ['llama-cpp', 'llama-cpp-development'], 'llama-cpp', 'cpu-llama-cpp-development', 'vulkan-llama-cpp', 'vulkan'],
  ];
  for (const [capability, metas, name, runs, own, pick] of table) {
    test(`${capability}: ${metas.join(' + ')} → ${name} runs ${runs}`, async (t) => {
      const root = await tempDir('localai-alias');
      const node = await localaiNode(root, capability);
      t.after(async () => {
        await node.close({ stopBackends: true });
        await rm(root, { recursive: true, force: true });
      });
      if (pick) await node.chooseVariant({ node: local, name, capability: pick });
      for (const meta of metas) assert.ok(await installAsLocalAi(node.backendsDir, meta, capability, 'echo', meta === name ? pick : undefined), meta);

      const row = await rowOf(node, name);
      assert.deepEqual([row.kind, row.metaBackendFor, row.runs, row.broken], ['backend', own, runs, null]);
      const note = row.localai.find((n) => n.startsWith(`LocalAI runs ${runs} for ${name}, not ${own}`));
      assert.ok(note, row.localai.join('\n'));
      if (pick) assert.match(note, new RegExp(`\\(the ${pick} build picked here\\)`));
      const entry = (await node.gallery({ node: local })).find((e) => e.name === name);
      assert.equal(entry?.meta?.installedAs, runs, 'the gallery says installed as what LocalAI runs');
      const loaded = await loadOn(node, name, `m-${name}`);
      assert.equal(loaded.backend, runs, 'load starts what LocalAI runs');
      assert.equal(loaded.dir, join(node.backendsDir, runs));
    });
  }
});

describe('1 and 2 over the real index on every capability: each X with X-development, installed as LocalAI installs them', () => {
  for (const capability of CAPABILITIES) {
    test(capability, async (t) => {
      const backends = join(await tempDir('localai-sweep'), 'backends');
      t.after(() => rm(join(backends, '..'), { recursive: true, force: true }));
      const families = [...index.values()].filter((e) => isMeta(e) && e.name.endsWith('-development') && index.has(e.name.slice(0, -'-development'.length)));
      const installed = new Map<string, string>(); // meta → build
      for (const dev of families) {
        for (const meta of [dev.name.slice(0, -'-development'.length), dev.name]) {
          if (!isMeta(index.get(meta)!)) continue;
          const build = await installAsLocalAi(backends, meta, capability, 'script');
          if (build) installed.set(meta, build);
        }
      }
      const snapshot = await DirectorySnapshot.read(new BackendStore(backends), capability);
      const rows = new Map(snapshot.rows().map((r) => [r.name, r]));
      const builds = new Set(installed.values());
      let disagreements = 0;
      for (const [meta, own] of installed) {
        const row = rows.get(meta)!;
        // The builds LocalAI groups under this name: those whose gallery entry gives the meta's name as alias.
        const group = [...builds].filter((b) => index.get(b)?.alias === meta);
        if (group.length === 0) assert.equal(row.runs, own, `${meta}: no alias group, the meta's own build`);
        else assert.ok(group.includes(row.runs!), `${meta} runs ${row.runs}, one of ${group.join(', ')}`);
        if (group.length === 1) assert.equal(row.runs, group[0]);
        if (row.runs !== own) {
          disagreements++;
          assert.ok(row.localai.some((n) => n.startsWith(`LocalAI runs ${row.runs} for ${meta}, not ${own}:`)), `${meta}: ${row.localai.join(' | ')}`);
        }
        assert.equal(snapshot.target(meta).name, row.runs, `${meta}: load starts what LocalAI runs`);
      }
      let guarded = 0;
      for (const build of builds) {
        const development = !build.endsWith('-development') && builds.has(`${build}-development`);
        const skip = snapshot.upgradeSkip(build);
        if (development) guarded++;
        assert.equal(skip !== null && skip.includes('development build'), development, `${build}: ${skip}`);
      }
      if (capability === 'metal' || capability === 'nvidia-l4t-cuda-12') assert.ok(disagreements >= 2, `${capability}: ${disagreements} disagreements`);
      assert.ok(guarded > 0, `${capability}: some build is guarded`);
    });
  }
});

describe('2. no upgrade of X while X-development is installed, as LocalAI (Upgrade all included)', () => {
  test('cpu-echo is not offered, cpu-echo-development is', async (t) => {
    const n = await startTestNode({ capability: 'default' });
    t.after(() => n.close());
    const publish = async (version: string) => {
      const src = await echoSource(n.root, version);
      await writeGallery(n.gallery, [
        { name: 'echo', capabilities: { default: 'cpu-echo' } },
        { name: 'cpu-echo', uri: src, version, alias: 'echo' },
        { name: 'cpu-echo-development', uri: src, version, alias: 'echo' },
      ]);
    };
    await publish('1.0.0');
    for (const name of ['echo', 'cpu-echo-development']) await runJob(n.node, n.node.install({ node: local, name }));
    await publish('2.0.0');
    await n.node.gallery({ node: local, refresh: true });
    const cpu = await rowOf(n.node, 'cpu-echo');
    assert.equal(cpu.upgradable, false);
    assert.ok(cpu.localai.some((line) => /No upgrade offered, as in LocalAI: cpu-echo-development is installed/.test(line)), cpu.localai.join('\n'));
    assert.equal((await rowOf(n.node, 'cpu-echo-development')).upgradable, true);
    assert.equal((await n.node.gallery({ node: local })).find((e) => e.name === 'cpu-echo')?.upgradable, false);
    const results = await n.node.upgradeAll({ node: local });
    assert.deepEqual(results.map((r) => [r.backend, r.ok]), [['cpu-echo-development', true]]);
    assert.equal(JSON.parse(await readFile(join(n.node.backendsDir, 'cpu-echo', 'metadata.json'), 'utf8')).version, '1.0.0');
  });
});

describe('4, 5, 6, 10: directories LocalAI writes or leaves, read as LocalAI reads them', () => {
  let root: string;
  let node: LocalNode;
  before(async () => {
    root = await tempDir('localai-layout');
    node = await localaiNode(root, 'nvidia');
  });
  after(async () => {
    await node.close({ stopBackends: true });
    await rm(root, { recursive: true, force: true });
  });

  test('10. the backends directory is 0750, as LocalAI makes it', async () => {
    assert.equal((await stat(node.backendsDir)).mode & 0o777, 0o750);
  });

  test('4. a run.sh with no execute bit is listed as runnable, made 0700 when it starts, and starts', async () => {
    // [mode written, broken, a note about it, mode after a load]
    const table: [number, boolean, boolean, number][] = [
      [0o644, false, true, 0o700],
      [0o600, false, true, 0o700],
      [0o744, false, false, 0o744],
      [0o755, false, false, 0o755],
    ];
    for (const [i, [mode, broken, note, after]] of table.entries()) {
      const name = `exec-${i}`;
      await writeLocalAiDir(node.backendsDir, name, { runSh: 'echo', mode, metadata: buildMetadata(name) });
      const row = await rowOf(node, name);
      assert.equal(row.broken !== null, broken, `${mode.toString(8)}: ${row.broken}`);
      assert.equal(row.localai.some((n) => n.includes('made 0700 when it starts')), note, `${mode.toString(8)}: ${row.localai.join(' | ')}`);
      await node.load({ node: local, backend: name, model: `exec-m${i}` });
      assert.equal((await stat(join(node.backendsDir, name, 'run.sh'))).mode & 0o777, after, mode.toString(8));
    }
    await writeLocalAiDir(node.backendsDir, 'exec-dir', { runSh: 'directory', metadata: buildMetadata('exec-dir') });
    assert.equal((await rowOf(node, 'exec-dir')).broken, 'run.sh is a directory, not a script');
    await assert.rejects(node.load({ node: local, backend: 'exec-dir', model: 'exec-md' }), /run\.sh is a directory/);
  });

  test('5. a meta whose build is gone is broken and says why; an alias group of its name still runs; reinstall is offered', async () => {
    await writeLocalAiDir(node.backendsDir, 'orphan', { runSh: 'none', metadata: metaMetadata('orphan', 'gone-build') });
    const orphan = await rowOf(node, 'orphan');
    assert.deepEqual([orphan.metaBackendFor, orphan.runs, orphan.broken], ['gone-build', 'gone-build', 'its build gone-build is not installed']);
    await assert.rejects(node.load({ node: local, backend: 'orphan', model: 'o1' }), /orphan is broken: its build gone-build is not installed/);

    await writeLocalAiDir(node.backendsDir, 'rescued', { runSh: 'none', metadata: metaMetadata('rescued', 'gone-too') });
    await writeLocalAiDir(node.backendsDir, 'cpu-rescued', { runSh: 'echo', metadata: buildMetadata('cpu-rescued', { alias: 'rescued' }) });
    const rescued = await rowOf(node, 'rescued');
    assert.deepEqual([rescued.runs, rescued.broken], ['cpu-rescued', null]);
    assert.equal((await loadOn(node, 'rescued', 'r1')).backend, 'cpu-rescued');

    // [meta, its build's run.sh, the row's broken]
    const table: [string, RunShKind, string][] = [
      ['meta-dir', 'directory', 'its build meta-dir-build is broken: run.sh is a directory, not a script'],
      ['meta-none', 'none', 'its build meta-none-build is broken: run.sh is missing'],
    ];
    for (const [meta, runSh, broken] of table) {
      await writeLocalAiDir(node.backendsDir, `${meta}-build`, { runSh, metadata: buildMetadata(`${meta}-build`) });
      await writeLocalAiDir(node.backendsDir, meta, { runSh: 'none', metadata: metaMetadata(meta, `${meta}-build`) });
      assert.equal((await rowOf(node, meta)).broken, broken, meta);
      await assert.rejects(node.load({ node: local, backend: meta, model: `${meta}-m` }), new RegExp(`${meta} is broken: ${broken}`));
    }
    await writeLocalAiDir(node.backendsDir, 'named-otherwise', { runSh: 'none', metadata: metaMetadata('other-name', 'cpu-rescued') });
    const otherwise = await rowOf(node, 'named-otherwise');
    assert.deepEqual([otherwise.runs, otherwise.localai], [null, ['LocalAI lists this meta backend as "other-name" (the name in its metadata.json), not as named-otherwise']]);
    await assert.rejects(node.load({ node: local, backend: 'named-otherwise', model: 'no' }), /named-otherwise is not installed as LocalAI lists backends: it runs nothing/);
    const other = await rowOf(node, 'other-name');
    assert.deepEqual([other.kind, other.runs], ['alias', 'cpu-rescued']);
    assert.match(other.localai.join(), /LocalAI lists this meta backend as other-name \(the name in named-otherwise\/metadata\.json\) and runs cpu-rescued/);
  });

  test('6. what only LocalAI lists: its leftovers, a name with a space, an alias of its own', async () => {
    const dirs: [string, Parameters<typeof writeLocalAiDir>[2]][] = [
      ['thing.install-tmp', { runSh: 'script', metadata: buildMetadata('thing', { alias: 'things' }) }],
      ['thing.upgrade-tmp', { runSh: 'script', metadata: null }],
      ['thing.install-backup', { runSh: 'script', metadata: buildMetadata('thing') }],
      ['thing.backup', { runSh: 'none', metadata: null }],
      ['my backend', { runSh: 'script', metadata: null }],
      ['stray', { runSh: 'none', metadata: null }],
      ['stray dir', { runSh: 'none', metadata: null }],
      ['cpu-widget', { runSh: 'echo', metadata: buildMetadata('cpu-widget', { alias: 'widget' }) }],
    ];
    for (const [name, spec] of dirs) await writeLocalAiDir(node.backendsDir, name, spec);
    const rows = new Map((await node.backends({ node: local })).map((b) => [b.name, b]));
    // [row, kind, runs, leftover]
    const table: [string, string, string | null, BackendView['leftover']][] = [
      ['thing.install-tmp', 'leftover', 'thing.install-tmp', { of: 'thing', suffix: '.install-tmp', restorable: false }],
      ['thing.upgrade-tmp', 'leftover', 'thing.upgrade-tmp', { of: 'thing', suffix: '.upgrade-tmp', restorable: false }],
      ['thing.install-backup', 'leftover', 'thing.install-backup', { of: 'thing', suffix: '.install-backup', restorable: true }],
      ['thing.backup', 'leftover', null, { of: 'thing', suffix: '.backup', restorable: true }],
      ['my backend', 'foreign', 'my backend', null],
      ['things', 'alias', 'thing.install-tmp', null],
      ['widget', 'alias', 'cpu-widget', null],
    ];
    for (const [name, kind, runs, leftover] of table) {
      const row = rows.get(name);
      assert.deepEqual([row?.kind, row?.runs, row?.leftover], [kind, runs, leftover], name);
    }
    assert.equal(rows.has('stray dir'), false, 'LocalAI does not list a directory with neither run.sh nor metadata');
    assert.deepEqual([rows.get('stray')?.runs, rows.get('stray')?.broken], [null, 'run.sh is missing'], 'one of a name Hangar manages is a broken backend');
    assert.ok(rows.get('thing.install-tmp')!.localai.includes('LocalAI lists it as a backend named thing.install-tmp'));
    assert.ok(rows.get('thing.install-tmp')!.localai.includes("LocalAI's next install of thing deletes it first"));
    assert.ok(rows.get('thing.upgrade-tmp')!.localai.includes("LocalAI's next upgrade of thing deletes it first"));
    assert.ok(rows.get('thing.install-backup')!.localai.includes('thing is gone: Restore puts this tree back as thing'));
    assert.match(rows.get('my backend')!.localai.join(), /LocalAI runs this directory as "my backend"/);
    assert.match(rows.get('widget')!.localai.join(), /^LocalAI runs cpu-widget for widget: widget is the alias of cpu-widget$/);
    assert.equal((await loadOn(node, 'widget', 'w1')).backend, 'cpu-widget');
    await assert.rejects(node.load({ node: local, backend: 'things', model: 't1' }), /LocalAI runs thing\.install-tmp for things, a directory Hangar does not start/);

    const events = new Set<string>();
    node.on('event', (e) => (e.type === 'backend-removed' ? events.add(`-${e.name}`) : e.type === 'backend' ? events.add(e.backend.name) : undefined));
    await node.resolveLeftover({ node: local, name: 'thing.install-tmp', action: 'delete' });
    assert.ok(events.has('-thing.install-tmp') && events.has('-things'), [...events].join(', '));
    await assert.rejects(node.resolveLeftover({ node: local, name: 'thing.upgrade-tmp', action: 'restore' }), /not a backup/);
    await node.resolveLeftover({ node: local, name: 'thing.install-backup', action: 'restore' });
    assert.ok(events.has('thing'));
    const thing = await rowOf(node, 'thing');
    assert.deepEqual([thing.kind, thing.runs, thing.broken], ['backend', 'thing', null]);
    assert.equal((await rowOf(node, 'thing.backup')).leftover?.restorable, false, 'thing is back, so the other backup cannot replace it');
    await node.resolveLeftover({ node: local, name: 'thing.backup', action: 'delete' });
    assert.ok(!(await readdir(node.backendsDir)).includes('thing.backup'));
  });

  test('10. an install writes LocalAI\'s layout: 0750 directories, installed_at as LocalAI formats it, a file gallery\'s file:// URL, its key order', async () => {
    const n = await startTestNode({ capability: 'default' });
    try {
      const src = await echoSource(n.root, '1.0.0');
      await writeGallery(n.gallery, [{ name: 'echo', capabilities: { default: 'cpu-echo' } }, { name: 'cpu-echo', uri: src, version: '1.0.0', alias: 'echo' }]);
      await runJob(n.node, n.node.install({ node: local, name: 'echo' }));
      for (const dir of ['echo', 'cpu-echo']) {
        assert.equal((await stat(join(n.node.backendsDir, dir))).mode & 0o777, 0o750, dir);
        const text = await readFile(join(n.node.backendsDir, dir, 'metadata.json'), 'utf8');
        assert.ok(!text.endsWith('\n'), 'no trailing newline, as Go writes it');
        const metadata = JSON.parse(text) as Record<string, string>;
        assert.match(metadata.installed_at!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)$/);
        // LocalAI records the URL its config names, and names a file only as file://PATH.
        assert.equal(metadata.gallery_url, `file://${resolve(n.gallery)}`, dir);
        const order = ['alias', 'meta_backend_for', 'name', 'gallery_url', 'installed_at', 'version', 'uri', 'digest', 'sha256'];
        const keys = Object.keys(metadata);
        assert.deepEqual(keys, order.filter((k) => keys.includes(k)), dir);
      }
    } finally {
      await n.close();
    }
  });
});

/** echo installed, upgraded to `version` (the first one becomes the rollback tree), then deleted as LocalAI deletes. */
async function installUpgradeAndDeleteAsLocalAi(n: TestNode, version: string): Promise<void> {
  await runJob(n.node, n.node.install({ node: local, name: 'echo' }));
  await n.publishEcho(version);
  await runJob(n.node, n.node.upgrade({ node: local, name: 'echo' }));
  await rm(join(n.node.backendsDir, 'echo'), { recursive: true });
}

describe('7 and 8: what LocalAI leaves at its start and after its delete', () => {
  test('7. a start leaves X.install-backup as it is, with X gone; Restore puts it back and it runs', async (t) => {
    const root = await tempDir('localai-start');
    const backends = join(root, 'home', 'backends');
    await mkdir(backends, { recursive: true });
    await writeLocalAiDir(backends, 'llama.install-backup', { runSh: 'echo', metadata: buildMetadata('llama') });
    const node = await localaiNode(root, 'default');
    t.after(async () => {
      await node.close({ stopBackends: true });
      await rm(root, { recursive: true, force: true });
    });
    assert.deepEqual(await readdir(backends), ['llama.install-backup'], 'nothing renamed at start, as LocalAI renames nothing');
    const row = await rowOf(node, 'llama.install-backup');
    assert.equal(row.leftover?.restorable, true);
    await node.resolveLeftover({ node: local, name: 'llama.install-backup', action: 'restore' });
    assert.equal((await loadOn(node, 'llama', 'l1')).backend, 'llama');
  });

  test('8. the rollback tree of a backend LocalAI deleted is shown with its size, deleted on request, and dropped after 7 days', async (t) => {
    const n = await startTestNode();
    t.after(() => n.close());
    await installUpgradeAndDeleteAsLocalAi(n, '2.0.0');
    const kept = await rowOf(n.node, 'echo');
    assert.deepEqual([kept.kind, kept.version, kept.runs], ['kept', '1.0.0', null]);
    const since = Date.parse(kept.kept!.since);
    assert.ok(Math.abs(since - Date.now()) < 60_000);
    assert.equal(Date.parse(kept.kept!.expiresAt) - since, 7 * 24 * 3600 * 1000);
    assert.ok(kept.kept!.bytes > 100_000, `${kept.kept!.bytes} bytes`);
    assert.match(kept.localai.join(), /Kept from a deleted backend: echo is no longer installed/);
    await runJob(n.node, n.node.delete({ node: local, name: 'echo' }));
    assert.deepEqual(await n.node.backends({ node: local }), []);

    await installUpgradeAndDeleteAsLocalAi(n, '3.0.0');
    const store = new BackendStore(n.node.backendsDir);
    assert.equal((await store.kept()).length, 1);
    assert.equal((await store.kept(Date.now() + 6 * 24 * 3600 * 1000)).length, 1, 'six days on: still kept');
    assert.deepEqual(await store.kept(Date.now() + 7 * 24 * 3600 * 1000 + 1000), [], 'seven days on: removed');
    assert.deepEqual(await readdir(join(n.node.backendsDir, '.hangar', 'previous')), []);
  });

  test('8. a reinstall after LocalAI\'s delete makes the kept tree an ordinary rollback target again', async (t) => {
    const n = await startTestNode();
    t.after(() => n.close());
    await installUpgradeAndDeleteAsLocalAi(n, '2.0.0');
    assert.equal((await rowOf(n.node, 'echo')).kind, 'kept');
    await runJob(n.node, n.node.install({ node: local, name: 'echo' }));
    const echo = await rowOf(n.node, 'echo');
    assert.deepEqual([echo.kind, echo.kept, echo.previous?.version], ['backend', null, '1.0.0']);
    assert.deepEqual(JSON.parse(await readFile(join(n.node.backendsDir, '.hangar', 'kept.json'), 'utf8')), {});
  });
});

describe('a corrupt metadata.json: LocalAI lists nothing at all, Hangar says so on that row', () => {
  test('the row is broken and names what LocalAI does; the other backends still run here', async (t) => {
    const root = await tempDir('localai-corrupt');
    const node = await localaiNode(root, 'default');
    t.after(async () => {
      await node.close({ stopBackends: true });
      await rm(root, { recursive: true, force: true });
    });
    await writeLocalAiDir(node.backendsDir, 'bad', { runSh: 'script', metadata: '{"name": ' });
    await writeLocalAiDir(node.backendsDir, 'good', { runSh: 'echo', metadata: buildMetadata('good') });
    await chmod(join(node.backendsDir, 'good', 'run.sh'), 0o755);
    const bad = await rowOf(node, 'bad');
    assert.match(bad.broken ?? '', /^metadata\.json is corrupt/);
    assert.ok(bad.localai.includes('LocalAI lists no backend at all while this metadata.json cannot be read'));
    assert.equal((await loadOn(node, 'good', 'g1')).backend, 'good');
  });
});
