import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { detectCapability } from './capability.ts';
import { resolveMetaKey } from './meta.ts';

const known = ['default', 'nvidia', 'amd', 'intel', 'metal', 'darwin-x86', 'nvidia-cuda-12', 'nvidia-cuda-13', 'nvidia-l4t', 'nvidia-l4t-cuda-12', 'nvidia-l4t-cuda-13'];
const noRunFile = '/nonexistent/hangar-capability';

test('the machine is probed into one of the known capability keys', () => {
  const capability = detectCapability({ PATH: process.env.PATH, LOCALAI_FORCE_META_BACKEND_CAPABILITY_RUN_FILE: noRunFile });
  assert.ok(known.includes(capability), capability);
});

test('forced capabilities: HANGAR_FORCE_CAPABILITY, then LocalAI variable, then LocalAI run file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-cap-'));
  try {
    const runFile = join(dir, 'capability');
    writeFileSync(runFile, 'vulkan\n');
    const base = { PATH: process.env.PATH, LOCALAI_FORCE_META_BACKEND_CAPABILITY_RUN_FILE: runFile };
    assert.equal(detectCapability(base), 'vulkan');
    assert.equal(detectCapability({ ...base, LOCALAI_FORCE_META_BACKEND_CAPABILITY: 'amd' }), 'amd');
    assert.equal(detectCapability({ ...base, LOCALAI_FORCE_META_BACKEND_CAPABILITY: 'amd', HANGAR_FORCE_CAPABILITY: ' nvidia-cuda-13 ' }), 'nvidia-cuda-13');
    assert.equal(detectCapability({ ...base, HANGAR_FORCE_CAPABILITY: '' }), 'vulkan', 'an empty override is no override');
    const probed = detectCapability({ PATH: process.env.PATH, LOCALAI_FORCE_META_BACKEND_CAPABILITY_RUN_FILE: noRunFile });
    assert.notEqual(probed, 'vulkan', 'without overrides the hardware decides');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('resolveMetaKey: exact key, then default, then cpu; no vendor-parent step (LocalAI SystemState.Capability)', () => {
  const llama = { default: 'cpu-llama', nvidia: 'cuda12-llama', 'nvidia-l4t': 'l4t-llama', metal: 'metal-llama' };
  const gpuOnly = { nvidia: 'cuda-vllm', cpu: 'cpu-vllm' };
  const table: [Record<string, string>, string, { key: string; target: string } | null][] = [
    [llama, 'metal', { key: 'metal', target: 'metal-llama' }],
    [llama, 'nvidia-cuda-13', { key: 'default', target: 'cpu-llama' }],
    [llama, 'nvidia-l4t-cuda-12', { key: 'default', target: 'cpu-llama' }],
    [llama, 'amd', { key: 'default', target: 'cpu-llama' }],
    [llama, 'disable', { key: 'default', target: 'cpu-llama' }],
    [gpuOnly, 'default', { key: 'cpu', target: 'cpu-vllm' }],
    [{ nvidia: 'cuda-only' }, 'default', null],
    [{ nvidia: 'cuda-only' }, 'toString', null],
  ];
  for (const [capabilities, capability, expected] of table) assert.deepEqual(resolveMetaKey(capabilities, capability), expected, capability);
});
