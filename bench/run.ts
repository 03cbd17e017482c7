// `npm run bench`: runs every bench/*.bench.ts, prints a table, writes bench-results.json. Each file runs in a process
// of its own: what one bench leaves behind (a heap grown by thousands of backends makes every fork of the process
// slower; timers, sockets) must not weigh on the next, whose host may be this process.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BenchFigure } from './figure.ts';

const [flag, file, out] = process.argv.slice(2);
if (flag === '--one') {
  const mod = (await import(pathToFileURL(join('bench', file!)).href)) as { default: () => Promise<BenchFigure[]> };
  writeFileSync(out!, JSON.stringify(await mod.default()));
  // Every figure is in: a handle the bench's peer left open (a client library of PM2, NATS or a browser) must not
  // keep the process from ending.
  process.exit(0);
}

const only = process.argv.slice(2);
const files = readdirSync('bench')
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();

const work = mkdtempSync(join(tmpdir(), 'hangar-bench-'));
const started = Date.now();
const figures: (BenchFigure & { file: string })[] = [];
const failed: string[] = [];
try {
  for (const name of files) {
    process.stderr.write(`bench: ${name}\n`);
    const result = join(work, `${name}.json`);
    const run = spawnSync(process.execPath, [...process.execArgv, 'bench/run.ts', '--one', name, result], { stdio: 'inherit' });
    // A bench that fails loses its own figures only; the run goes on, and ends saying so.
    if (run.status === 0) figures.push(...(JSON.parse(readFileSync(result, 'utf8')) as BenchFigure[]).map((f) => ({ ...f, file: name })));
    else failed.push(`${name} (${run.signal ?? `exit code ${run.status}`})`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

const rows = figures.map((f) => ({
  figure: f.name,
  value: `${+f.value.toFixed(3)} ${f.unit}`,
  goal: `<= ${f.goal} ${f.unit}`,
  ok: f.value <= f.goal ? 'yes' : 'NO',
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
  '| figure | value | goal | met | what it measures, against what (file) |',
  '| --- | --- | --- | --- | --- |',
  ...figures.map((f) => `| \`${f.name}\` | ${+f.value.toPrecision(3)} ${f.unit} | ≤ ${+f.goal.toPrecision(3)} ${f.unit} | ${f.value <= f.goal ? 'yes' : '**missed**'} | ${cell(f.note ?? '')} (\`${f.file}\`) |`),
];
writeFileSync('bench-results.md', markdown.join('\n') + '\n');
console.log('wrote bench-results.json and bench-results.md');
if (failed.length > 0) {
  console.error(`bench: FAILED, no figures from: ${failed.join(', ')}`);
  process.exitCode = 1;
}
