// The kinds of node are composed in one place, here: the cluster's code and LocalAI's never import each other.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';

const electron = dirname(import.meta.dirname);
const IMPORT = /(?:import|export)\s[^'"]*?from\s*'([^']+)'|import\('([^']+)'\)/g;

function* sources(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(path);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) yield path;
  }
}

test('electron/cluster and electron/localai never import each other', () => {
  for (const [from, to] of [['cluster', 'localai'], ['localai', 'cluster']] as const) {
    for (const file of sources(join(electron, from))) {
      for (const [, specifier = '', dynamic = ''] of readFileSync(file, 'utf8').matchAll(IMPORT)) {
        const target = resolve(dirname(file), specifier || dynamic);
        assert.ok(!target.startsWith(join(electron, to) + '/'), `${relative(electron, file)} imports ${relative(electron, target)}`);
      }
    }
  }
});
