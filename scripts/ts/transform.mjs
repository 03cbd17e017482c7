// A TypeScript file as the ES module the tests run: esbuild's transform with the tsconfig's options and an inline
// source map, kept in a cache by content that every process of a test run shares (under TMPDIR, which
// scripts/test.mjs makes for the run).
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

const tsconfig = JSON.parse(readFileSync(new URL('../../tsconfig.json', import.meta.url), 'utf8'));
/** What a transform depends on besides the file: a change to either makes every entry a miss. */
const salt = createHash('sha1').update(JSON.stringify(tsconfig.compilerOptions)).update(readFileSync(new URL('../../node_modules/esbuild/package.json', import.meta.url))).digest('hex');
let cacheDir;
let esbuild;

/** The module `path` makes, whose text is `source`. */
export async function transformed(path, source) {
  if (!cacheDir) mkdirSync((cacheDir = join(tmpdir(), `hangar-ts-${userInfo().uid}`)), { recursive: true });
  const key = createHash('sha1').update(salt).update(path).update('\0').update(source).digest('hex');
  const cached = join(cacheDir, `${key}.mjs`);
  try {
    return readFileSync(cached, 'utf8');
  } catch {
    // not seen yet in this run
  }
  esbuild ??= await import('esbuild');
  const { code } = await esbuild.transform(source, {
    loader: path.endsWith('.tsx') ? 'tsx' : 'ts',
    format: 'esm',
    sourcefile: path,
    sourcemap: 'inline',
    sourcesContent: false,
    target: `node${process.versions.node}`,
    tsconfigRaw: { compilerOptions: tsconfig.compilerOptions },
  });
  // Written whole, then renamed: processes read the cache side by side.
  const partial = `${cached}.${process.pid}.tmp`;
  writeFileSync(partial, code);
  renameSync(partial, cached);
  return code;
}

/** Fills the cache with `paths` in one process, so the run's test processes need no esbuild of their own. */
export async function warm(paths) {
  await Promise.all(paths.map((path) => transformed(path, readFileSync(path, 'utf8'))));
  await esbuild?.stop();
}
