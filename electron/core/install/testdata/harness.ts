// Test helper: a backends dir with a live "demo" (v1) beside a sentinel dir, to install into and to prove that a
// refused install touched neither the live tree nor anything outside its place.
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { installBackend, type InstallRequest } from '../install.ts';
import { builtinSources } from '../builtin-sources.ts';
import { BackendStore } from '../store.ts';
import { backendEntries, makeTarGz, snapshot, tempRoot, writeArchive } from './fixtures.ts';

export const noBase = { baseDir: null, baseUrl: null };

export interface Harness {
  root: string;
  backends: string;
  sentinel: string;
  src: string;
  store: BackendStore;
  install(uri: string, extra?: Partial<InstallRequest>): ReturnType<typeof installBackend>;
  /** Live "demo" is the same tree (inodes, modes, content), nothing leaked, no working dir left. */
  assertUntouched(): void;
  /** Nothing was written outside the backends' own places, and no working dir is left. */
  assertNothingElse(): void;
}

export async function harness(t: TestContext, root?: string): Promise<Harness> {
  root ??= await tempRoot(t);
  const backends = join(root, 'backends');
  const sentinel = join(root, 'sentinel');
  const src = join(root, 'src');
  await mkdir(sentinel, { recursive: true });
  const store = new BackendStore(backends);
  const install = (uri: string, extra: Partial<InstallRequest> = {}) =>
    installBackend(store, { name: 'demo', uris: [uri], factories: builtinSources, sourceOptions: noBase, ...extra });
  await install(await writeArchive(src, 'good.tar.gz', await makeTarGz(backendEntries('v1'))));
  const before = snapshot(join(backends, 'demo'));
  const assertNothingElse = () => {
    assert.deepEqual(readdirSync(sentinel), [], 'nothing written next to the backends dir');
    assert.deepEqual(readdirSync(backends).filter((n) => n !== '.hangar'), ['demo']);
    assert.deepEqual(workLeft(backends), [], 'no staging, backup or trash left');
    assert.deepEqual(readdirSync(root).sort(), ['backends', 'sentinel', 'src']);
  };
  return {
    root,
    backends,
    sentinel,
    src,
    store,
    install,
    assertUntouched() {
      assert.deepEqual(snapshot(join(backends, 'demo')), before);
      assertNothingElse();
    },
    assertNothingElse,
  };
}

export function workLeft(backends: string): string[] {
  return ['staging', 'backup', 'trash'].flatMap((kind) => {
    const dir = join(backends, '.hangar', kind);
    return existsSync(dir) ? readdirSync(dir).map((n) => `${kind}/${n}`) : [];
  });
}
