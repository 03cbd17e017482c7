import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';

export interface BenchFigure {
  name: string;
  value: number;
  unit: string;
  /** The goal; the figure passes when value <= goal. */
  goal: number;
  /** What the figure was measured against, in a few words. */
  note?: string;
}

/** Median of a non-empty list. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * The lowest and highest of the rounds' own ratios (`ours[i] / peer[i]`, measured in the same round), as "0.62–0.91×":
 * how far one run's figure may stray from the median.
 */
export function ratioSpread(ours: number[], peer: number[]): string {
  const ratios = ours.map((value, i) => value / peer[i]!);
  return `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}×`;
}

/**
 * Runs one round's steps one after another, each going first in turn (round 0 starts with the first step, round 1
 * with the second...): what runs second meets what the first left behind (dirty pages being written back, a fresh
 * process still settling), so no side always pays for it.
 */
export async function inTurns(round: number, steps: (() => unknown)[]): Promise<void> {
  for (let i = 0; i < steps.length; i++) await steps[(round + i) % steps.length]!();
}

/** Milliseconds `action` takes, awaited. */
export async function timed(action: () => unknown): Promise<number> {
  const start = performance.now();
  await action();
  return performance.now() - start;
}

/** Runs a shell script to its end, failing on a non-zero exit; never blocks this process (it may be serving the script). */
export async function shell(script: string): Promise<void> {
  await run('sh', ['-c', script], script);
}

/** The same in bash, for process substitution; a pipeline fails when any of its commands does. */
export async function bash(script: string): Promise<void> {
  await run('bash', ['-o', 'pipefail', '-c', script], script);
}

async function run(command: string, args: string[], script: string): Promise<void> {
  const child = spawn(command, args, { stdio: 'inherit' });
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`${script} failed (${code})`);
}
