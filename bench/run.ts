// `npm run bench`: runs every bench/*.bench.ts, prints a table, writes bench-results.json.
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BenchFigure } from './figure.ts';

const only = process.argv.slice(2);
const files = readdirSync('bench')
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();

const figures: BenchFigure[] = [];
for (const file of files) {
  process.stderr.write(`bench: ${file}\n`);
  const mod = (await import(pathToFileURL(join('bench', file)).href)) as { default: () => Promise<BenchFigure[]> };
  figures.push(...(await mod.default()));
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
console.log('wrote bench-results.json');
// Every figure is in: a handle some bench's peer left open (a client library of PM2, NATS or a browser) must not keep
// the run from ending.
process.exit(0);
