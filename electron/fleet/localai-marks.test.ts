// After LocalAI's version changes, the backends its gallery marks for upgrade are named: a real agent running the
// stand-in LocalAI from a releases server, its echo backend installed from a real OCI registry (Debian's
// docker-registry). A new image pushed to the backend's tag is seen at LocalAI's upgrade, though the node's digest
// cache still holds the old one; a model's load that then fails on that backend says so (a respawn, and LocalAI's own
// next upgrade, which rolls back); Upgrade all clears the mark.
import assert from 'node:assert/strict';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BackendView, LocalAiRunView, ProcessView } from '../../shared/types.ts';
import { hangar, json, startAgent, until, type Agent } from '../agent/test-agent.ts';
import { hostPlatform } from '../core/install/oci/platform.ts';
import { buildLayer, directoryEntries, pushImage } from '../core/install/oci/testing/image.ts';
import { startRegistry, type TestRegistry } from '../core/install/oci/testing/registry.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { StandInReleases } from '../localai/testing/standin-releases.ts';
import { releasePlatform } from '../localai/runner/release.ts';
import { whyMarked } from './localai-marks.ts';

test('a mark says "new build" for the same version or tag, else the two versions', () => {
  const backend = (version: string | null, availableVersion: string | null) => ({ version, availableVersion }) as BackendView;
  assert.equal(whyMarked(backend(null, null)), 'new build');
  assert.equal(whyMarked(backend('1.0.0', '1.0.0')), 'new build');
  assert.equal(whyMarked(backend('1.0.0', '1.1.0')), '1.0.0 → 1.1.0');
  assert.equal(whyMarked(backend(null, '1.1.0')), 'no version → 1.1.0');
});

describe("LocalAI's version changes: the backends its gallery marks", () => {
  let root: string;
  let home: string;
  let registry: TestRegistry;
  let releases: StandInReleases;
  let agent: Agent;

  const status = () => json<LocalAiRunView>(agent, 'localai', 'status');
  const ok = async (...args: string[]) => {
    const result = await hangar(agent, ...args);
    assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
    return result;
  };
  /** A load asked of LocalAI itself, as its web UI or an API client makes one; the status it answered. */
  const loadThroughLocalAi = async (view: LocalAiRunView, model: string) => {
    const key = (await readFile(join(home, 'state', 'localai-api-key'), 'utf8')).trim();
    const response = await fetch(`${view.url}/backend/load`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model }),
    });
    return response.status;
  };
  const echo = async () => (await json<BackendView[]>(agent, 'ls')).find((b) => b.name === 'echo')!;
  /** Pushes echo `version` to the one tag the gallery names. */
  const pushEcho = async (version: string) => {
    const layer = await buildLayer(await directoryEntries(await echoSource(root, version)));
    await pushImage(registry.url, 'backends/echo', 'latest', { layers: [layer], platforms: [hostPlatform()] });
  };

  before(async () => {
    root = await tempDir('localai-marks');
    home = join(root, 'home');
    registry = await startRegistry();
    await pushEcho('1.0.0');
    const gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: `${registry.host}/backends/echo:latest` }]);
    releases = new StandInReleases(root, releasePlatform()!);
    await releases.start();
    agent = await startAgent(home, gallery, ['--localai-releases', releases.url, '--ports', '24440-24459']);
    await ok('install', 'echo');
    await mkdir(join(home, 'models'), { recursive: true });
    await writeFile(join(home, 'models', 'm1.yaml'), 'name: m1\nbackend: echo\n');
    await writeFile(join(home, 'models', 'm2.yaml'), 'name: m2\nbackend: echo\n');
  });

  after(async () => {
    agent?.child.kill('SIGTERM');
    if (agent) await new Promise((resolve) => agent.child.once('exit', resolve));
    await releases?.stop();
    await registry?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  test('a first start checks the backends and marks none that are current', async () => {
    await releases.publish({ version: 'v3.2.0' });
    await ok('localai', 'install');
    const started = await json<LocalAiRunView>(agent, 'localai', 'start');
    assert.equal(started.state, 'ready');
    assert.deepEqual(started.marked, []);
  });

  test('after a LocalAI upgrade, the backend whose tag has a new image is marked "new build"', async () => {
    await pushEcho('2.0.0');
    assert.equal((await echo()).upgradable, false, "the node's digest cache still holds the tag's old digest");
    await releases.publish({ version: 'v3.3.0' });
    await ok('localai', 'upgrade');
    const after = await status();
    assert.equal(after.version, 'v3.3.0');
    assert.deepEqual(after.marked, [{ name: 'echo', why: 'new build', since: 'v3.3.0' }]);
    const text = (await ok('localai', 'status')).stdout;
    assert.match(text, /marked for upgrade by LocalAI's gallery since LocalAI v3\.3\.0: echo \(new build\)\nupgrade them: hangar upgrade --all\n/);
    assert.match((await ok('localai', 'logs')).stdout, /LocalAI v3\.3\.0: its gallery marks echo \(new build\) for upgrade/);
  });

  test("a model's load that then fails on the marked backend names it", async () => {
    const view = await status();
    for (const model of ['m1', 'm2']) assert.equal(await loadThroughLocalAi(view, model), 200);
    await until("m1 and m2 among the node's processes", async () => ((await json<ProcessView[]>(agent, 'ps')).filter((p) => p.model === 'm1' || p.model === 'm2').length === 2 ? true : undefined), 10_000);
    // The stale build, as a new LocalAI finds it: its loads fail (the echo backend's LoadModel reads ./VERSION).
    await rm(join(home, 'backends', 'echo', 'VERSION'));
    const respawn = await hangar(agent, 'respawn', 'm1');
    assert.equal(respawn.code, 1);
    assert.match(respawn.stderr, /^hangar: m1 did not load, and its backend echo has a new build since LocalAI v3\.3\.0: upgrade it \(hangar upgrade echo, or Settings → LocalAI → Upgrade all\)\. LocalAI at \S+ answered \/backend\/load with 500: /);
  });

  test("a model LocalAI's own upgrade cannot load again names the marked backend, and the upgrade rolls back", async () => {
    await releases.publish({ version: 'v3.4.0' });
    const upgrade = await hangar(agent, 'localai', 'upgrade', 'v3.4.0');
    assert.equal(upgrade.code, 1);
    assert.match(upgrade.stderr, /LocalAI v3\.3\.0 → v3\.4\.0 failed: m2 did not load, and its backend echo has a new build since LocalAI v3\.4\.0: upgrade it \(hangar upgrade echo, or Settings → LocalAI → Upgrade all\)\. /);
    const after = await status();
    assert.equal(after.version, 'v3.3.0');
    assert.deepEqual(after.marked, [{ name: 'echo', why: 'new build', since: 'v3.3.0' }], 'checked again on the build rolled back to');
  });

  test('Upgrade all upgrades the marked backend and clears its mark', async () => {
    await ok('upgrade', '--all');
    assert.equal((await echo()).upgradable, false);
    await until('the mark cleared', async () => ((await status()).marked.length === 0 ? true : undefined), 10_000);
    assert.doesNotMatch((await ok('localai', 'status')).stdout, /marked for upgrade/);
    assert.equal(await loadThroughLocalAi(await status(), 'm1'), 200, 'the new build loads the model');
  });
});
