import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareVersions, isUpgradable } from './version.ts';

test('compareVersions orders semver-ish versions numerically', () => {
  const table: [string, string, number][] = [
    ['1.2.3', '1.2.3', 0],
    ['v1.2.3', '1.2.3', 0],
    ['1.2', '1.2.0', 0],
    ['1.2.3+build.7', '1.2.3', 0],
    ['1.10.0', '1.9.0', 1],
    ['1.9.9', '1.10.0', -1],
    ['2', '1.99.99', 1],
    ['1.0.0-rc.1', '1.0.0', -1],
    ['1.0.0-rc.2', '1.0.0-rc.10', -1],
    ['1.0.0-alpha', '1.0.0-beta', -1],
    ['1.0.0-1', '1.0.0-alpha', -1],
    ['1.0.0-rc.1', '1.0.0-rc', 1],
    ['3.4.0', '3.3.9-cuda12', 1],
    ['2024.10.2', '2024.9.30', 1],
    ['master-abc', 'master-abd', -1],
  ];
  for (const [a, b, expected] of table) {
    assert.equal(compareVersions(a, b), expected, `${a} vs ${b}`);
    assert.equal(compareVersions(b, a), -expected || 0, `${b} vs ${a}`);
  }
});

test('isUpgradable: versions first, then sha256, then digest; nothing known means no upgrade', () => {
  const none = { version: null, sha256: null, digest: null };
  const sha = (c: string) => c.repeat(64);
  const table: [string, Parameters<typeof isUpgradable>[0], Parameters<typeof isUpgradable>[1], boolean][] = [
    ['newer in gallery', { ...none, version: '1.2.0' }, { ...none, version: '1.10.0' }, true],
    ['same version', { ...none, version: '1.2.0' }, { ...none, version: 'v1.2.0' }, false],
    ['older in gallery', { ...none, version: '2.0.0' }, { ...none, version: '1.9.0' }, false],
    ['versions decide over sha256', { version: '1.0.0', sha256: sha('a'), digest: null }, { version: '1.0.0', sha256: sha('b'), digest: null }, false],
    ['unparseable and different', { ...none, version: 'master' }, { ...none, version: 'nightly' }, true],
    ['unparseable and equal', { ...none, version: 'master' }, { ...none, version: 'master' }, false],
    ['one side unparseable', { ...none, version: '1.0.0' }, { ...none, version: 'latest' }, true],
    ['sha256 differs', { ...none, sha256: sha('a') }, { ...none, sha256: sha('b') }, true],
    ['sha256 same, case aside', { ...none, sha256: sha('a') }, { ...none, sha256: sha('A') }, false],
    ['version on one side only falls to sha256', { ...none, version: '1.0.0', sha256: sha('a') }, { ...none, sha256: sha('a') }, false],
    ['digest differs', { ...none, digest: 'sha256:1' }, { ...none, digest: 'sha256:2' }, true],
    ['digest same', { ...none, digest: 'sha256:1' }, { ...none, digest: 'sha256:1' }, false],
    ['gallery version, nothing installed to compare', none, { ...none, version: '1.0.0' }, false],
    ['nothing at all', none, none, false],
  ];
  for (const [label, installed, available, expected] of table) assert.equal(isUpgradable(installed, available), expected, label);
});
