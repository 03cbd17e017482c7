// The core's import graph, read from the sources: no cycle, and no part reaching back up to the file that composes it
// (supervisor/ to supervisor.ts, node/ to node.ts). Which layer may import which is ESLint's rule (eslint.config.js).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';

const core = import.meta.dirname;
const IMPORT = /(?:import|export)\s[^'"]*?from\s*'([^']+)'|import\('([^']+)'\)/g;

function* sources(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    // testdata/ holds stand-in hosts for tests, which import what they host.
    if (entry.isDirectory() && entry.name !== 'testdata') yield* sources(path);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) yield path;
  }
}

/** Each core source and the files it imports (relative imports, resolved). */
function graph(): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const file of sources(core)) {
    const specifiers = [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((m) => m[1] ?? m[2]!);
    edges.set(file, specifiers.filter((s) => s.startsWith('.')).map((s) => resolve(dirname(file), s)));
  }
  return edges;
}

const name = (file: string) => relative(core, file);

test('no part imports the file that composes it', () => {
  const rules = [
    { parts: join(core, 'supervisor'), composers: [join(core, 'supervisor', 'supervisor.ts'), join(core, 'supervisor', 'index.ts')] },
    { parts: join(core, 'node'), composers: [join(core, 'node.ts')] },
  ];
  for (const [file, imports] of graph()) {
    for (const { parts, composers } of rules) {
      if (!file.startsWith(`${parts}/`) || composers.includes(file)) continue;
      for (const target of imports) assert.ok(!composers.includes(target), `${name(file)} imports ${name(target)}`);
    }
  }
});

test('the core has no import cycle', () => {
  const edges = graph();
  const state = new Map<string, 'open' | 'done'>();
  const visit = (file: string, path: string[]): void => {
    if (state.get(file) === 'done') return;
    assert.notEqual(state.get(file), 'open', `cycle: ${[...path.slice(path.indexOf(file)), file].map(name).join(' → ')}`);
    state.set(file, 'open');
    for (const target of edges.get(file) ?? []) visit(target, [...path, file]);
    state.set(file, 'done');
  };
  for (const file of edges.keys()) visit(file, []);
});
