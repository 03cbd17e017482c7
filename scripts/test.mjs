// Runs every node:test file (*.test.ts) under the source folders, through tsx.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';

const roots = ['shared', 'electron', 'backends', 'renderer/src'];
const filter = process.argv.slice(2);

function* walk(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(path);
    else if (entry.name.endsWith('.test.ts')) yield path;
  }
}

const files = roots.flatMap((root) => [...walk(root)]).filter((f) => filter.length === 0 || filter.some((p) => f.includes(p)));
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
// Files run side by side, each in its own process: their supervisors reserve backend ports machine-wide, and every
// test that needs a fixed port has a range of its own below the ephemeral ports. HANGAR_TEST_CONCURRENCY overrides.
const concurrency = Number(process.env.HANGAR_TEST_CONCURRENCY) || Math.min(4, Math.max(2, availableParallelism()));
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, ...files], { stdio: 'inherit' });
process.exit(result.status ?? 1);
