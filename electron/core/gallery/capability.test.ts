import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { detectCapability, parseNvidiaSmi, parseRocmSmi, parseXpuSmi } from './capability.ts';
import { parseVulkanInfo } from './vulkan-vram.ts';
import { isBackendCompatible, preferredBuild, resolveMetaKey } from './meta.ts';

const known = ['default', 'nvidia', 'amd', 'intel', 'vulkan', 'metal', 'darwin-x86', 'nvidia-cuda-12', 'nvidia-cuda-13', 'nvidia-l4t', 'nvidia-l4t-cuda-12', 'nvidia-l4t-cuda-13'];
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

test('LocalAI overrides as LocalAI reads them: the variable verbatim, an empty run file forces "" (CPU builds)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-cap-'));
  try {
    const file = (name: string, text: string) => {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    };
    const empty = file('empty', '');
    const blanks = file('blanks', ' \n\t\n');
    const amd = file('amd', '\u0085 amd\n');
    const probed = detectCapability({ PATH: process.env.PATH, LOCALAI_FORCE_META_BACKEND_CAPABILITY_RUN_FILE: noRunFile });
    // [variable, run file, expected capability]
    const table: [string | undefined, string, string][] = [
      ['   ', noRunFile, '   '],
      [' nvidia ', noRunFile, ' nvidia '],
      ['', empty, ''],
      [undefined, empty, ''],
      [undefined, blanks, ''],
      [undefined, amd, 'amd'],
      ['   ', amd, '   '],
      [undefined, dir, probed],
      [undefined, noRunFile, probed],
    ];
    for (const [variable, runFile, expected] of table) {
      const env = { PATH: process.env.PATH, LOCALAI_FORCE_META_BACKEND_CAPABILITY_RUN_FILE: runFile, LOCALAI_FORCE_META_BACKEND_CAPABILITY: variable };
      assert.equal(detectCapability(env), expected, `${JSON.stringify(variable)} with ${runFile}`);
    }
    const llama = { default: 'cpu-llama-cpp', nvidia: 'cuda12-llama-cpp', vulkan: 'vulkan-llama-cpp' };
    for (const forced of ['', '   ', ' nvidia ']) {
      assert.deepEqual(resolveMetaKey(llama, forced), { key: 'default', target: 'cpu-llama-cpp' }, JSON.stringify(forced));
      assert.equal(isBackendCompatible('cuda12-llama-cpp', null, forced), false, 'a GPU build does not run on a forced blank');
      assert.equal(isBackendCompatible('cpu-llama-cpp', null, forced), true);
      assert.equal(preferredBuild(['vulkan-llama-cpp', 'cpu-llama-cpp'], forced), 'cpu-llama-cpp');
    }
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

test('VRAM is read from the same tool outputs LocalAI reads', () => {
  const MiB = 1024 * 1024;
  assert.equal(parseNvidiaSmi('24576\n8192\n'), (24576 + 8192) * MiB);
  assert.equal(parseRocmSmi('device,VRAM Total Memory (B),VRAM Total Used Memory (B)\ncard0,17163091968,10960896\n'), 17163091968);
  assert.equal(parseRocmSmi('device,total,used\nGPU[0],16368,12\n'), 16368 * MiB, 'small figures are MiB');
  const arc = JSON.stringify({ device_list: [{ device_id: 0, device_name: 'Intel(R) Arc(TM) A770', memory_physical_size_byte: 17079205888 }] });
  assert.equal(parseXpuSmi(arc), 17079205888, 'an Intel discrete GPU is not read as 0 bytes');
  assert.equal(parseXpuSmi('not json'), 0);
  const vulkan = [
    'GPU0:', 'VkPhysicalDeviceProperties:', '\tdeviceName = AMD Radeon RX 7600', '\tdeviceType = PHYSICAL_DEVICE_TYPE_DISCRETE_GPU',
    'VkPhysicalDeviceMemoryProperties:', 'memoryHeaps: count = 2',
    '\tmemoryHeaps[0]:', '\t\tsize   = 8573157376 (0x1ff000000) (7.98 GiB)', '\t\tflags:', '\t\t\tMEMORY_HEAP_DEVICE_LOCAL_BIT',
    '\tmemoryHeaps[1]:', '\t\tsize   = 16717197312 (0x3e46a3000) (15.57 GiB)', '\t\tflags:', '\t\t\tNone',
    'memoryTypes: count = 1',
    'GPU1:', '\tdeviceType = PHYSICAL_DEVICE_TYPE_CPU', 'VkPhysicalDeviceMemoryProperties:', 'memoryHeaps: count = 1',
    '\tmemoryHeaps[0]:', '\t\tsize   = 33434394624', '\t\t\tMEMORY_HEAP_DEVICE_LOCAL_BIT',
  ].join('\n');
  assert.equal(parseVulkanInfo(vulkan), 8573157376, 'device-local heaps of real GPUs only');
});
