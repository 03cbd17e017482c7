// A LocalAI an agent started and could not stop (the agent was killed) keeps running in its own session: its pid, start
// time and address are kept in `<home>/localai/running.json` while it runs. The next agent cannot take it over (it is
// no child of its, and its output goes to a pipe nobody reads), and two would share one models and backends directory:
// so it notes the models that LocalAI has loaded, stops it (SIGINT, then SIGKILL) with what it runs, and starts its own
// again with them, as Hangar's own models are started again after their host died.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as z from 'zod';
import { currentPlatform } from '../../core/platform/index.ts';
import { alive, isSameProcess, signalTree } from '../../core/supervisor/index.ts';
import { readJsonFile, writeJsonFile } from '../../core/state-file.ts';

const FILE = 'running.json';
const record = z.object({ pid: z.number().int().positive(), startTime: z.string(), url: z.string().optional() });
const POLL_MS = 20;

export interface LeftRunning {
  pid: number;
  /** Where it listened (null from a record that did not say). */
  url: string | null;
  /** The models it had loaded, to load again on the LocalAI started in its place. */
  models: string[];
  /** How many of its processes had to be killed once it was asked to stop. */
  killed: number;
}

export async function noteRunning(dir: string, process: { pid: number; startTime: string | null; url: string }): Promise<void> {
  if (process.startTime !== null) await writeJsonFile(join(dir, FILE), { pid: process.pid, startTime: process.startTime, url: process.url });
}

export async function noteStopped(dir: string): Promise<void> {
  await rm(join(dir, FILE), { force: true });
}

/** Stops the LocalAI a previous agent left running, if any, having asked it which models it has loaded. */
export async function stopLeftRunning(dir: string, graceMs: number, loadedModels: (url: string) => Promise<string[]>): Promise<LeftRunning | null> {
  const left = record.safeParse(await readJsonFile(join(dir, FILE)));
  await noteStopped(dir);
  const platform = currentPlatform();
  if (!left.success || !(await isSameProcess(platform, left.data.pid, left.data.startTime))) return null;
  const url = left.data.url ?? null;
  const models = url ? await loadedModels(url).catch(() => []) : [];
  const leader = { pid: left.data.pid, startTime: left.data.startTime, cgroup: null };
  const [tree] = await platform.trees([leader]);
  await signalTree(platform, tree!.filter((m) => m.pid === leader.pid), 'SIGINT');
  const deadline = Date.now() + graceMs;
  while ((await isSameProcess(platform, leader.pid, leader.startTime)) && Date.now() < deadline) await sleep(POLL_MS);
  const rest = await alive(platform, [...tree!, ...(await platform.trees([leader]))[0]!]);
  await signalTree(platform, rest, 'SIGKILL');
  return { pid: leader.pid, url, models, killed: rest.length };
}

/** What the next agent says of it: one line. */
export function leftRunningText(left: LeftRunning): string {
  const killed = left.killed > 0 ? `, and killed ${left.killed} of its processes` : '';
  return `stopped the LocalAI (pid ${left.pid}) a previous agent left running${killed}; starting it again${left.models.length > 0 ? `, with ${left.models.join(', ')}` : ''}`;
}
