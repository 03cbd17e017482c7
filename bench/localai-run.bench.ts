// LocalAI run by Hangar, against the same binary run by hand. The stand-in LocalAI (written from LocalAI's code) is
// installed from a local release server as the `local-ai` binary, and run by a LocalAiRunner in this process.
// localai_start_to_ready_ms: from asking for a start to the answer that LocalAI is ready; floor: the same binary
// spawned by hand with the same flags and environment, /readyz polled every 10 ms until it answers.
// localai_upgrade_downtime_ms: while a prober asks /readyz every 5 ms, from its first refused request to its first
// answered one, over Hangar's upgrade to a new release (the download comes before the stop); floor: SIGINT to the
// running binary, its exit waited for, the new binary spawned by hand, with the same prober.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { localAiApiKey } from '../electron/localai/runner/api-key.ts';
import { freePort } from '../electron/localai/runner/free-port.ts';
import { releasePlatform } from '../electron/localai/runner/release.ts';
import { LocalAiRunner } from '../electron/localai/runner/runner.ts';
import { StandInReleases } from '../electron/localai/testing/standin-releases.ts';
import { inTurns, median, timed, type BenchFigure } from './figure.ts';

const ROUNDS = 5;
const PROBE_MS = 5;

export default async function (): Promise<BenchFigure[]> {
  const root = await mkdtemp(join(tmpdir(), 'hangar-bench-localai-run-'));
  const home = join(root, 'home');
  const releases = new StandInReleases(root, releasePlatform()!);
  await releases.start();
  const runner = new LocalAiRunner({ home, backendsPath: join(home, 'backends'), releases: releases.url, log: () => undefined });
  try {
    await runner.load();
    let patch = 0;
    const nextRelease = async () => {
      const version = `v1.0.${patch++}`;
      await releases.publish({ version });
      return version;
    };
    await runner.install(await nextRelease());
    // The key the runner gives LocalAI (made at its first start, if not yet): the run by hand gets the same.
    const apiKey = await localAiApiKey(join(home, 'state'));
    const byHand = (binary: string, port: number) =>
      spawn(binary, ['run', '--address', `127.0.0.1:${port}`, '--backends-path', join(home, 'backends'), '--models-path', join(home, 'models')], {
        cwd: join(home, 'localai'),
        env: { ...process.env, LOCALAI_API_KEY: apiKey },
        stdio: 'ignore',
      });
    const stopByHand = async (child: ChildProcess) => {
      const exited = once(child, 'exit');
      child.kill('SIGINT');
      await exited;
    };

    const start = { hangar: [] as number[], floor: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      await inTurns(round, [
        async () => {
          start.hangar.push(await timed(() => runner.control('start')));
          await runner.control('stop');
        },
        async () => {
          const port = await freePort();
          let child: ChildProcess | null = null;
          start.floor.push(await timed(async () => {
            child = byHand(runner.view().binary!, port);
            await readyAt(`http://127.0.0.1:${port}`, 10);
          }));
          await stopByHand(child!);
        },
      ]);
    }

    const downtime = { hangar: [] as number[], floor: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      const version = await nextRelease();
      await inTurns(round, [
        async () => {
          const view = await runner.control('start');
          downtime.hangar.push(await outage(view.url!, () => runner.install(version)));
          await runner.control('stop');
        },
        async () => {
          const port = await freePort();
          const binary = runner.view().binary!;
          let child = byHand(binary, port);
          const url = `http://127.0.0.1:${port}`;
          await readyAt(url, 10);
          downtime.floor.push(await outage(url, async () => {
            await stopByHand(child);
            child = byHand(binary, port);
            await readyAt(url, 10);
          }));
          await stopByHand(child);
        },
      ]);
    }

    const startFloor = median(start.floor);
    const downFloor = median(downtime.floor);
    return [
      {
        name: 'localai_start_to_ready_ms',
        value: median(start.hangar),
        unit: 'ms',
        goal: 1.1 * startFloor + 50,
        note: `hangar localai start to ready, median of ${ROUNDS}; floor ${startFloor.toFixed(0)} ms: the same binary spawned by hand, /readyz polled every 10 ms`,
      },
      {
        name: 'localai_upgrade_downtime_ms',
        value: median(downtime.hangar),
        unit: 'ms',
        goal: 1.2 * downFloor,
        note: `first refused to first answered /readyz over hangar localai upgrade, median of ${ROUNDS}; floor ${downFloor.toFixed(0)} ms: SIGINT, exit, the new binary spawned by hand`,
      },
    ];
  } finally {
    await runner.close();
    await releases.stop();
    await rm(root, { recursive: true, force: true });
  }
}

async function answers(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) });
    await response.body?.cancel();
    return response.status === 200;
  } catch {
    return false;
  }
}

async function readyAt(url: string, everyMs: number): Promise<void> {
  while (!(await answers(url))) await sleep(everyMs);
}

/** From the prober's first refused request to its first answered one after it, while `action` runs. */
async function outage(url: string, action: () => Promise<unknown>): Promise<number> {
  let firstRefused: number | null = null;
  let backAt: number | null = null;
  let done = false;
  const prober = (async () => {
    while (!done || (firstRefused !== null && backAt === null)) {
      const asked = performance.now();
      const ok = await answers(url);
      if (!ok && firstRefused === null) firstRefused = asked;
      if (ok && firstRefused !== null && backAt === null) backAt = performance.now();
      await sleep(PROBE_MS);
    }
  })();
  await action();
  done = true;
  await prober;
  if (firstRefused === null || backAt === null) throw new Error(`no outage seen at ${url}`);
  return backAt - firstRefused;
}
