// A LocalAI an agent started and could not stop (the agent was killed) keeps running in its own session: its pid and
// start time are kept in `<home>/localai/running.json` while it runs, and the next agent stops it (SIGINT, then
// SIGKILL) with what it runs before it starts one of its own: two would share one models and backends directory.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as z from 'zod';
import { currentPlatform } from '../../core/platform/index.ts';
import { alive, isSameProcess, signalTree } from '../../core/supervisor/index.ts';
import { readJsonFile, writeJsonFile } from '../../core/state-file.ts';

const FILE = 'running.json';
const record = z.object({ pid: z.number().int().positive(), startTime: z.string() });
const POLL_MS = 20;

export async function noteRunning(dir: string, pid: number, startTime: string | null): Promise<void> {
  if (startTime !== null) await writeJsonFile(join(dir, FILE), { pid, startTime });
}

export async function noteStopped(dir: string): Promise<void> {
  await rm(join(dir, FILE), { force: true });
}

/** Stops the LocalAI a previous agent left running, if any; says what it did, or null. */
export async function stopLeftRunning(dir: string, graceMs: number): Promise<string | null> {
  const left = record.safeParse(await readJsonFile(join(dir, FILE)));
  await noteStopped(dir);
  const platform = currentPlatform();
  if (!left.success || !(await isSameProcess(platform, left.data.pid, left.data.startTime))) return null;
  const leader = { ...left.data, cgroup: null };
  const [tree] = await platform.trees([leader]);
  await signalTree(platform, tree!.filter((m) => m.pid === leader.pid), 'SIGINT');
  const deadline = Date.now() + graceMs;
  while ((await isSameProcess(platform, leader.pid, leader.startTime)) && Date.now() < deadline) await sleep(POLL_MS);
  const rest = await alive(platform, [...tree!, ...(await platform.trees([leader]))[0]!]);
  await signalTree(platform, rest, 'SIGKILL');
  return `stopped the LocalAI (pid ${leader.pid}) a previous agent left running${rest.length > 0 ? `, and killed ${rest.length} of its processes` : ''}`;
}
