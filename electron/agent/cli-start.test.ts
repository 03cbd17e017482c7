// What a command loads before it runs, read from the build (npm test builds first): the modules a bundle imports
// statically are compiled at every start, whatever the command. The cluster's administration (NATS, JetStream, the
// operator's JWTs) loads only when one of its commands runs, the gallery's code only in the agent, and zod only as far
// as the schemas use it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

const DIST = join(import.meta.dirname, '../../dist/agent');
const STATIC_IMPORT = /^(?:import|export)\s(?:[^'";]*?\sfrom\s)?"\.\/([^"]+)";?$/gm;

const source = (file: string) => readFileSync(join(DIST, file), 'utf8');

/** The bundle files `entry` loads before its first line runs: its static imports, transitively. */
function loadedWith(entry: string): string[] {
  const seen = new Set([entry]);
  for (const file of seen) for (const [, target] of source(file).matchAll(STATIC_IMPORT)) seen.add(target!);
  return [...seen];
}

/** The packages bundled into those files (esbuild heads each module with its path). */
function packagesIn(files: string[]): Set<string> {
  const packages = new Set<string>();
  for (const file of files) for (const [, name] of source(file).matchAll(/^\/\/ node_modules\/((?:@[^/]+\/)?[^/]+)\//gm)) packages.add(name!);
  return packages;
}

test('a command other than `hangar agent` starts without the gallery\'s code and its YAML parser', () => {
  const packages = packagesIn(loadedWith('cli.js'));
  assert.ok(!packages.has('js-yaml'), `the CLI loads ${[...packages].join(', ')}`);
});

test('every command starts without the NATS client, and `hangar agent` without it unless it joins a cluster', () => {
  const cli = loadedWith('cli.js');
  const agent = /import\("\.\/(run-agent-[^"]+)"\)/.exec(source('cli.js'))?.[1];
  assert.ok(agent, 'the agent command loads its code when it runs');
  for (const [what, files] of [['the CLI', cli], ['the agent', loadedWith(agent)]] as const) {
    const packages = [...packagesIn(files)];
    assert.deepEqual(packages.filter((p) => p.startsWith('@nats-io/') || p === 'tweetnacl'), [], `${what} loads ${packages.join(', ')}`);
  }
});

test('zod comes without the messages of its other languages (62 of them: 0.55 MB to compile at every start)', () => {
  const cli = loadedWith('cli.js').map(source).join('\n');
  assert.match(cli, /^\/\/ node_modules\/zod\//m, 'zod is in the CLI: the wire is checked');
  assert.doesNotMatch(cli, /^\/\/ node_modules\/zod\/v4\/locales\/(?!en\.js)/m, 'only the English messages');
});
