// Runs every node:test file (*.test.ts) under the source folders, through tsx.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
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
// One file at a time: every file's supervisors allocate backend ports from the same range, and two hosts racing
// for one port is a known limit (see the README), not what these tests are about.
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', ...files], { stdio: 'inherit' });
process.exit(result.status ?? 1);
