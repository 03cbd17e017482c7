// localai_fresh_after_swap_ms: from a swap of a backend's directory to a LocalAI server serving its model warm from
// the new tree (its process running from the live directory, the model loaded), with Hangar beside it. Twice: after
// Hangar's own upgrade, and after a swap LocalAI makes itself (its upgrade's renames). Floor for each: the same swap
// with Hangar's reload turned off, and the same shutdown + load sent by hand the moment the new tree is in place.
// Clocks start at the swap's first rename, as an fs.watch in this process sees it. A real LocalNode with the
// LocalAI link as its co-runner, and the stand-in LocalAI server written from LocalAI's code, in this process.
import { watch } from 'node:fs';
import { cp, mkdtemp, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { LocalNode } from '../electron/core/node.ts';
import { echoSource, runJob, writeGallery } from '../electron/core/testing/fixtures.ts';
import { LocalAiServer } from '../electron/localai/server/server.ts';
import { StandInServer } from '../electron/localai/testing/standin-server.ts';
import { inTurns, median, type BenchFigure } from './figure.ts';

const ROUNDS = 7;
const DETECTION_MS = 100;

export default async function (): Promise<BenchFigure[]> {
  const root = await mkdtemp(join(tmpdir(), 'hangar-bench-localai-'));
  const gallery = join(root, 'index.yaml');
  let minor = 0;
  const publish = async () => {
    const version = `1.${++minor}.0`;
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, version), version }]);
    return version;
  };
  await publish();
  const link = new LocalAiServer({ stateDir: join(root, 'home', 'state'), fixed: null });
  const node = new LocalNode({ home: join(root, 'home'), galleries: [{ name: 'bench', location: gallery }], runtimeEnv: { HANGAR_NODE: process.execPath }, capability: 'default', coRunner: link });
  await node.start();
  const live = join(node.backendsDir, 'echo');
  let localai: StandInServer | null = null;
  try {
    await runJob(node, node.install({ node: 'local', name: 'echo' }));
    const server = (localai = new StandInServer({ backendsDir: node.backendsDir, models: { m1: 'echo' }, healthAttempts: 500, healthIntervalMs: 20 }));
    await server.start();
    const post = (path: string) => fetch(server.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m1"}' }).then((r) => r.text());
    await post('/backend/load');
    await link.update({ url: server.url });

    /** When m1 is loaded in a process whose cwd is the live directory (read every millisecond). */
    const fresh = async (): Promise<number> => {
      for (;;) {
        const pid = server.pids().get('m1');
        const [cwd, dir] = pid ? await Promise.all([stat(`/proc/${pid}/cwd`, { bigint: true }).catch(() => null), stat(live, { bigint: true }).catch(() => null)]) : [null, null];
        if (cwd && dir && cwd.dev === dir.dev && cwd.ino === dir.ino) return performance.now();
        await sleep(1);
      }
    };
    /**
     * The time the live directory was first renamed away, once the new tree is in its place (and then, for a floor,
     * shutdown + load sent by hand).
     */
    const swapSeen = async (byHand: boolean): Promise<{ at: Promise<number> }> => {
      const old = await stat(live, { bigint: true });
      const at = new Promise<number>((resolve) => {
        let renamedAt: number | null = null;
        let done = false;
        const watcher = watch(node.backendsDir, (_event, name) => {
          if (name === 'echo') renamedAt ??= performance.now();
          void stat(live, { bigint: true }).then(
            (now) => {
              if (done || renamedAt === null || now.ino === old.ino) return;
              done = true;
              watcher.close();
              resolve(renamedAt);
              if (byHand) void post('/backend/shutdown').then(() => post('/backend/load'));
            },
            () => undefined,
          );
        });
      });
      return { at };
    };
    const respawnAfterSwap = (on: boolean) => node.updateSettings({ node: 'local', settings: { localaiRespawn: on } });
    /** Hangar's upgrade to a new build; returns ms from its first rename to m1 fresh. */
    const hangarSwap = async (byHand: boolean) => {
      await respawnAfterSwap(!byHand);
      await publish();
      const seen = await swapSeen(byHand);
      // The floor's swap starts nothing of its own either: with no LocalAI reload to prove the build, no smoke start.
      const job = await runJob(node, node.upgrade({ node: 'local', name: 'echo', smokeStart: !byHand }));
      if (job.state !== 'done') throw new Error(`the upgrade ended ${job.state}: ${job.error}`);
      const renamedAt = await seen.at;
      return (await fresh()) - renamedAt;
    };
    /** LocalAI's own upgrade's renames (live → .backup, the new tree in, the backup removed), done here. */
    const localaiSwap = async (byHand: boolean) => {
      await respawnAfterSwap(!byHand);
      const staged = join(root, `echo.upgrade-tmp-${++minor}`);
      await cp(live, staged, { recursive: true });
      await writeFile(join(staged, 'VERSION'), `1.${minor}.0\n`);
      const seen = await swapSeen(byHand);
      await rename(live, `${live}.backup`);
      await rename(staged, live);
      await rm(`${live}.backup`, { recursive: true, force: true });
      const renamedAt = await seen.at;
      return (await fresh()) - renamedAt;
    };

    const results = { hangar: [] as number[], hangarFloor: [] as number[], localai: [] as number[], localaiFloor: [] as number[] };
    for (let i = 0; i < ROUNDS; i++) {
      await inTurns(i, [
        async () => results.hangar.push(await hangarSwap(false)),
        async () => results.hangarFloor.push(await hangarSwap(true)),
        async () => results.localai.push(await localaiSwap(false)),
        async () => results.localaiFloor.push(await localaiSwap(true)),
      ]);
    }
    // Only a swap LocalAI makes has to be seen first: Hangar's own is known the moment it happens.
    const figure = (name: string, value: number[], floor: number[], what: string, detectionMs: number): BenchFigure => ({
      name,
      value: median(value),
      unit: 'ms',
      goal: +(1.2 * median(floor) + detectionMs).toFixed(1),
      note: `${what}: first rename to m1 loaded in a process of the live tree; floor ${median(floor).toFixed(0)} ms (the same swap, shutdown + load sent by hand once the new tree is in place); goal 1.2 × floor${detectionMs ? ` + ${detectionMs} ms` : ''}; median of ${ROUNDS}, in turns`,
    });
    return [
      figure('localai_fresh_after_swap_ms', results.hangar, results.hangarFloor, "Hangar's upgrade", 0),
      figure('localai_fresh_after_localai_swap_ms', results.localai, results.localaiFloor, "LocalAI's own upgrade (its renames)", DETECTION_MS),
    ];
  } finally {
    await node.close({ stopBackends: true });
    await localai?.stop();
    await rm(root, { recursive: true, force: true });
  }
}
