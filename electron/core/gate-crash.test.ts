// A host killed (SIGKILL) while a swap waits at its health gate: the new build never passed it, so the next start
// swaps the old build back, runs what the swap stopped from it again, and ends the job as failed and rolled back.
// The host is a real child process (testing/node-host.ts) killed at the gate; the next start is a LocalNode here.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, test, type TestContext } from 'node:test';
import type { JobView, LoadResult, ProcessView } from '../../shared/types.ts';
import { LocalNode } from './node.ts';
import { isAlive } from './supervisor/identity.ts';
import { echoSource, tempDir, writeGallery } from './testing/fixtures.ts';
import { TS_NODE } from './testing/ts-node.ts';

const local = 'local';
const hostScript = join(import.meta.dirname, 'testing/node-host.ts');

interface HostLine {
  ready?: true;
  job?: JobView;
  process?: ProcessView;
  loaded?: LoadResult;
}

/** A node host in a child process, and the lines it says. */
function startHost(home: string, gallery: string) {
  const child: ChildProcess = spawn(process.execPath, [...TS_NODE, hostScript, home, gallery], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const until = async (match: (line: HostLine) => boolean): Promise<HostLine> => {
    for (;;) {
      const next = await lines.next();
      if (next.done) throw new Error('the host ended before saying what was awaited');
      const line = JSON.parse(next.value as string) as HostLine;
      if (match(line)) return line;
    }
  };
  const send = (command: string) => child.stdin!.write(`${command}\n`);
  return { child, until, send };
}

/** A gallery offering echo `version`; `runSh` replaces its run.sh. */
async function publish(root: string, gallery: string, version: string, runSh?: string): Promise<void> {
  const src = await echoSource(root, version);
  if (runSh) await writeFile(join(src, 'run.sh'), runSh, { mode: 0o755 });
  await writeGallery(gallery, [{ name: 'echo', uri: src, version }]);
}

/** Waits for a process view of `model` matching `match` on `node` (events, or what it lists already). */
async function processOf(node: LocalNode, model: string, match: (view: ProcessView) => boolean, withinMs = 20_000): Promise<ProcessView> {
  const listed = (await node.processes({ node: local })).find((p) => p.model === model && match(p));
  if (listed) return listed;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no matching process view of ${model}`)), withinMs);
    node.on('event', function onEvent(event) {
      if (event.type !== 'process' || event.process.model !== model || !match(event.process)) return;
      clearTimeout(timer);
      node.off('event', onEvent);
      resolve(event.process);
    });
  });
}

/**
 * A host in a child process on a fresh home, with echo 1.0.0 installed from the gallery; `nextStart` makes the host's
 * next start, here: a LocalNode on the same home (start it). After `t`, the host is killed and the next start stopped
 * with its backends, then the folder removed: each of them writes into it until it is gone.
 */
async function hostWithEcho(t: TestContext) {
  const root = await tempDir('gate-crash');
  const home = join(root, 'home');
  const gallery = join(root, 'index.yaml');
  const hosts: ChildProcess[] = [];
  const nodes: LocalNode[] = [];
  t.after(async () => {
    for (const child of hosts) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const node of nodes) await node.close({ stopBackends: true });
    // What the next start's stop of the killed host's leftovers writes may still land as the folder goes.
    await rm(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
  });
  await publish(root, gallery, '1.0.0');
  const host = startHost(home, gallery);
  hosts.push(host.child);
  await host.until((l) => l.ready === true);
  host.send('install echo');
  await host.until((l) => l.job?.kind === 'install' && l.job.state === 'done');
  const nextStart = (): LocalNode => {
    const node = new LocalNode({ home, galleries: [{ name: 'test', location: gallery }], runtimeEnv: { HANGAR_NODE: process.execPath } });
    nodes.push(node);
    return node;
  };
  return { root, gallery, host, nextStart };
}

describe('a host killed during the health gate', () => {
  // A v2 that hangs before it serves Health: the gate waits on it until the host is killed.
  const hanging = '#!/bin/sh\necho "v2: warming up forever" >&2\nexec sleep 300\n';

  test('with a model running: the next start swaps back to 1.0.0, runs the model from it, and the job failed and rolled back', async (t) => {
    const { root, gallery, host, nextStart } = await hostWithEcho(t);
    host.send('load echo m1');
    const { loaded } = await host.until((l) => l.loaded !== undefined);

    await publish(root, gallery, '2.0.0', hanging);
    host.send('upgrade echo');
    const { job } = await host.until((l) => l.job?.kind === 'upgrade' && l.job.phase === 'respawning');
    // The v2 process is starting (and will never answer): the host is at its gate.
    const { process: v2 } = await host.until((l) => l.process?.model === 'm1' && l.process.state === 'starting' && l.process.pid !== loaded!.pid);
    host.child.kill('SIGKILL');
    await once(host.child, 'exit');

    const node = nextStart();
    const recovered = await node.start();
    assert.ok(recovered.includes('echo: swapped back: the host stopped during the health gate'), recovered.join('\n'));
    assert.equal((await readFile(join(node.backendsDir, 'echo', 'VERSION'), 'utf8')).trim(), '1.0.0');
    const [echo] = await node.backends({ node: local });
    assert.equal(echo?.version, '1.0.0');
    assert.equal(echo?.previous, null, 'the build that never passed its gate is not kept as the rollback target');

    const ended = await node.waitJob({ node: local, id: job!.id });
    assert.deepEqual(
      [ended.state, ended.phase, ended.error],
      ['failed', 'rolled back', 'upgrade echo to 2.0.0 failed: the host stopped during the health gate; rolled back to 1.0.0'],
    );
    assert.ok((await node.jobs({ node: local })).some((j) => j.id === job!.id), 'the job is listed as it ended');

    const m1 = await processOf(node, 'm1', (p) => p.state === 'ready');
    assert.deepEqual([m1.dir, m1.cwd], [join(node.backendsDir, 'echo'), 'ok']);
    assert.equal(isAlive(v2!.pid), false, 'the v2 process went with its host');
    const again = await node.load({ node: local, backend: 'echo', model: 'm1' });
    assert.equal(again.reused, true, 'the model runs again from 1.0.0');
    assert.match(again.message, /with echo 1\.0\.0$/);
  });

  test('during a smoke start (no model running): the next start swaps back and the job failed and rolled back', async (t) => {
    const { root, gallery, host, nextStart } = await hostWithEcho(t);

    await publish(root, gallery, '2.0.0', hanging);
    host.send('upgrade echo');
    const { job } = await host.until((l) => l.job?.kind === 'upgrade' && l.job.phase === 'smoke start');
    host.child.kill('SIGKILL');
    await once(host.child, 'exit');

    const node = nextStart();
    await node.start();
    assert.equal((await node.backends({ node: local }))[0]?.version, '1.0.0');
    const ended = await node.waitJob({ node: local, id: job!.id });
    assert.equal(ended.error, 'upgrade echo to 2.0.0 failed: the host stopped during the health gate; rolled back to 1.0.0');
    assert.deepEqual(await node.processes({ node: local }), [], 'nothing ran before the swap, and nothing runs after');
  });
});
