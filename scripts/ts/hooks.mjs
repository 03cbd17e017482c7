// The module hooks register.mjs installs (they run in Node's loader thread): a .ts or .tsx file loads as the ES module
// esbuild makes of it, with the tsconfig's options and an inline source map, from the cache when its content was
// seen before. Resolution is Node's own: the sources import with explicit extensions (moduleResolution NodeNext).
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const tsconfig = JSON.parse(readFileSync(new URL('../../tsconfig.json', import.meta.url), 'utf8'));
const cacheDir = join(tmpdir(), `hangar-ts-${userInfo().uid}`);
mkdirSync(cacheDir, { recursive: true });
/** What a transform depends on besides the file: a change to either makes every entry a miss. */
const salt = createHash('sha1').update(JSON.stringify(tsconfig.compilerOptions)).update(readFileSync(new URL('../../node_modules/esbuild/package.json', import.meta.url))).digest('hex');
let esbuild;

export async function load(url, context, nextLoad) {
  const loader = /\.tsx?$/.exec(url)?.[0].slice(1);
  if (!loader || !url.startsWith('file:')) return nextLoad(url, context);
  const path = fileURLToPath(url);
  const source = readFileSync(path, 'utf8');
  const key = createHash('sha1').update(salt).update(path).update('\0').update(source).digest('hex');
  const cached = join(cacheDir, `${key}.mjs`);
  let code;
  try {
    code = readFileSync(cached, 'utf8');
  } catch {
    esbuild ??= await import('esbuild');
    ({ code } = await esbuild.transform(source, {
      loader,
      format: 'esm',
      sourcefile: path,
      sourcemap: 'inline',
      sourcesContent: false,
      target: `node${process.versions.node}`,
      tsconfigRaw: { compilerOptions: tsconfig.compilerOptions },
    }));
    // Written whole, then renamed: processes read the cache side by side.
    const partial = `${cached}.${process.pid}.tmp`;
    writeFileSync(partial, code);
    renameSync(partial, cached);
  }
  return { format: 'module', source: code, shortCircuit: true };
}
