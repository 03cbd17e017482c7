import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareVersions } from '../../../shared/version-order.ts';
import { digestDiffers, versionVerdict } from './version.ts';

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

test('versionVerdict and digestDiffers follow LocalAI: any version difference, gallery version over none, else digest', () => {
  const table: [string, string | null, string | null, boolean | 'digest'][] = [
    ['newer in gallery', '1.2.0', '1.10.0', true],
    ['same version', '1.2.0', '1.2.0', false],
    ['gallery went back', '2.0.0', '1.9.0', true],
    ['v prefix differs', '1.0', 'v1.0', true],
    ['gallery version, none installed', null, '1.0.0', true],
    ['installed version, none in gallery', '1.0.0', null, 'digest'],
    ['no versions', null, null, 'digest'],
  ];
  for (const [label, installed, available, expected] of table) assert.equal(versionVerdict(installed, available), expected, label);
  assert.equal(digestDiffers('sha256:1', 'sha256:1'), false);
  assert.equal(digestDiffers('sha256:1', 'sha256:2'), true);
  assert.equal(digestDiffers(null, 'sha256:1'), true, 'no stored digest cannot be confirmed current');
});
