// `npm run bench`: runs every bench/*.bench.ts, prints a table, writes bench-results.json. Each file runs in a process
// of its own: what one bench leaves behind (a heap grown by thousands of backends makes every fork of the process
// slower; timers, sockets) must not weigh on the next, whose host may be this process. It runs in a process group and
// a temp folder of its own, both removed when it ends, however it ended: an agent a failed bench started does not
// run on into the next.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BenchFigure } from './figure.ts';

const [flag, file, out] = process.argv.slice(2);
if (flag === '--one') {
  try {
    const mod = (await import(pathToFileURL(join('bench', file!)).href)) as { default: () => Promise<BenchFigure[]> };
    writeFileSync(out!, JSON.stringify(await mod.default()));
  } catch (error) {
    // The reason goes into the run's own summary, not only into output that may have scrolled away.
    writeFileSync(`${out!}.error`, error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(1);
  }
  // Every figure is in: a handle the bench's peer left open (a client library of PM2, NATS or a browser) must not
  // keep the process from ending.
  process.exit(0);
}

const only = process.argv.slice(2);
const files = readdirSync('bench')
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
  .sort();

const work = mkdtempSync(join(tmpdir(), 'hangar-bench-'));
const started = Date.now();
/** Each figure with its file and the machine's load (1-minute average) as that file began: what else was running. */
const figures: (BenchFigure & { file: string; load: number })[] = [];
const failed: string[] = [];
try {
  for (const name of files) {
    process.stderr.write(`bench: ${name}\n`);
    const result = join(work, `${name}.json`);
    const load = loadavg()[0]!;
    const ended = await runAlone(name, result, join(work, `${name}.tmp`));
    // A bench that fails loses its own figures only; the run goes on, and ends saying so, and why.
    if (ended === null) figures.push(...(JSON.parse(readFileSync(result, 'utf8')) as BenchFigure[]).map((f) => ({ ...f, file: name, load })));
    else {
      const why = existsSync(`${result}.error`) ? readFileSync(`${result}.error`, 'utf8') : 'it printed its reason above, if any';
      process.stderr.write(`bench: ${name} FAILED (${ended}): ${why}\n`);
      failed.push(`${name} (${ended}: ${why.split('\n')[0]})`);
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

/**
 * Runs one bench file in a process group and a temp folder of its own; once it ends, whatever it left running in its
 * group is stopped (TERM, then KILL) and its temp folder goes with the run's. Resolves null, or how it failed.
 */
async function runAlone(name: string, result: string, tmp: string): Promise<string | null> {
  mkdirSync(tmp);
  const child = spawn(process.execPath, [...process.execArgv, 'bench/run.ts', '--one', name, result], {
    stdio: 'inherit',
    detached: true,
    env: { ...process.env, TMPDIR: tmp },
  });
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  for (const [sent, wait] of [['SIGTERM', 5000], ['SIGKILL', 0]] as const) {
    const left = leftRunning(child.pid!);
    if (left.length === 0) break;
    process.stderr.write(`bench: ${name} left processes running, sent ${sent}:\n${left.map((line) => `  ${line}\n`).join('')}`);
    process.kill(-child.pid!, sent);
    for (let waited = 0; waited < wait && leftRunning(child.pid!).length > 0; waited += 100) await sleep(100);
  }
  return code === 0 ? null : (signal ?? `exit code ${code}`);
}

/**
 * The processes of the group `pgid` still running, a line each (pid, elapsed time, command). An ended one its parent
 * did not reap (a zombie: tsx's esbuild once the bench exited, on a machine whose init does not reap) runs nothing.
 */
function leftRunning(pgid: number): string[] {
  const ps = spawnSync('ps', ['-eo', 'pid=,pgid=,stat=,etime=,args='], { encoding: 'utf8' }).stdout ?? '';
  return ps
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([, group, stat]) => group === String(pgid) && !stat!.startsWith('Z'))
    .map(([pid, , , elapsed, ...args]) => `${pid} ${elapsed} ${args.join(' ').slice(0, 200)}`);
}

const rows = figures.map((f) => ({
  figure: f.name,
  value: `${+f.value.toFixed(3)} ${f.unit}`,
  goal: `<= ${f.goal} ${f.unit}`,
  ok: f.value <= f.goal ? 'yes' : 'NO',
  load: f.load.toFixed(1),
  note: f.note ?? '',
}));
console.table(rows);
writeFileSync('bench-results.json', JSON.stringify(Object.fromEntries(figures.map((f) => [f.name, f])), null, 2) + '\n');
// The same figures as a Markdown table, as the README shows a run.
const minutes = Math.round((Date.now() - started) / 60_000);
const cell = (text: string) => text.replaceAll('|', '\\|');
const markdown = [
  `${files.length} bench files, ${new Date(started).toISOString().slice(0, 16).replace('T', ' ')} UTC, ${minutes} minutes`,
  '',
  '| figure | value | goal | met | load | what it measures, against what (file) |',
  '| --- | --- | --- | --- | --- | --- |',
  ...figures.map((f) => `| \`${f.name}\` | ${+f.value.toPrecision(3)} ${f.unit} | ≤ ${+f.goal.toPrecision(3)} ${f.unit} | ${f.value <= f.goal ? 'yes' : '**missed**'} | ${f.load.toFixed(1)} | ${cell(f.note ?? '')} (\`${f.file}\`) |`),
];
writeFileSync('bench-results.md', markdown.join('\n') + '\n');
console.log('wrote bench-results.json and bench-results.md');
if (failed.length > 0) {
  console.error(`bench: FAILED, no figures from: ${failed.join(', ')}`);
  process.exitCode = 1;
}
