// Meta resolution and compatibility over LocalAI's real index, for every capability LocalAI reports. The expected
// builds were worked out by hand from LocalAI's code (pkg/system/capabilities.go Capability and
// IsBackendCompatible, core/gallery/backend_types.go IsCompatibleWith, core/gallery/backends.go
// InstallBackendFromGallery over the filtered AvailableBackends): the capability's key, else `default`, else
// `cpu`; then the build must itself be compatible by the tokens in its name and uri. null: LocalAI installs nothing.
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import { HangarError } from '../../../shared/errors.ts';
import { Galleries } from './galleries.ts';
import { isEntryCompatible } from './meta.ts';

const fixture = fileURLToPath(new URL('../../../bench/fixtures/localai-backend-index.yaml', import.meta.url));
const galleries = new Galleries({ specs: [{ name: 'localai', location: fixture }] });
after(() => galleries.close());

const capabilities = [
  'default', 'nvidia', 'nvidia-cuda-12', 'nvidia-cuda-13', 'nvidia-l4t', 'nvidia-l4t-cuda-12', 'nvidia-l4t-cuda-13',
  'amd', 'intel', 'vulkan', 'metal', 'darwin-x86', 'disable',
] as const;
type Capability = (typeof capabilities)[number];

const expected: Record<string, Record<Capability, string | null>> = {
  // Lists every key, `default` included.
  'llama-cpp': {
    default: 'cpu-llama-cpp',
    nvidia: 'cuda12-llama-cpp',
    'nvidia-cuda-12': 'cuda12-llama-cpp',
    'nvidia-cuda-13': 'cuda13-llama-cpp',
    'nvidia-l4t': 'nvidia-l4t-arm64-llama-cpp',
    'nvidia-l4t-cuda-12': 'nvidia-l4t-arm64-llama-cpp',
    'nvidia-l4t-cuda-13': 'cuda13-nvidia-l4t-arm64-llama-cpp',
    amd: 'rocm-llama-cpp',
    intel: 'intel-sycl-f16-llama-cpp',
    vulkan: 'vulkan-llama-cpp',
    metal: 'metal-llama-cpp',
    'darwin-x86': 'cpu-llama-cpp',
    disable: 'cpu-llama-cpp',
  },
  // No `default`, but a `cpu` build: that is the catch-all.
  vllm: {
    default: 'cpu-vllm',
    nvidia: 'cuda12-vllm',
    'nvidia-cuda-12': 'cuda12-vllm',
    'nvidia-cuda-13': 'cuda13-vllm',
    'nvidia-l4t': 'cpu-vllm',
    'nvidia-l4t-cuda-12': 'cpu-vllm',
    'nvidia-l4t-cuda-13': 'cuda13-nvidia-l4t-arm64-vllm',
    amd: 'rocm-vllm',
    intel: 'intel-vllm',
    vulkan: 'cpu-vllm',
    metal: 'metal-vllm',
    'darwin-x86': 'cpu-vllm',
    disable: 'cpu-vllm',
  },
  // GPU builds only: nothing on a machine whose key is missing; `disable` looks up `default` and finds nothing.
  transformers: {
    default: null,
    nvidia: 'cuda12-transformers',
    'nvidia-cuda-12': 'cuda12-transformers',
    'nvidia-cuda-13': 'cuda13-transformers',
    'nvidia-l4t': null,
    'nvidia-l4t-cuda-12': null,
    'nvidia-l4t-cuda-13': null,
    amd: 'rocm-transformers',
    intel: 'intel-transformers',
    vulkan: null,
    metal: 'metal-transformers',
    'darwin-x86': null,
    disable: null,
  },
  // Every build's name holds "mlx", which LocalAI reads as a Mac-only build: only Macs (or `disable`) get one.
  mlx: {
    default: null,
    nvidia: null,
    'nvidia-cuda-12': null,
    'nvidia-cuda-13': null,
    'nvidia-l4t': null,
    'nvidia-l4t-cuda-12': null,
    'nvidia-l4t-cuda-13': null,
    amd: null,
    intel: null,
    vulkan: null,
    metal: 'metal-mlx',
    'darwin-x86': 'cpu-mlx',
    disable: 'cpu-mlx',
  },
};

for (const [meta, byCapability] of Object.entries(expected)) {
  test(`meta ${meta} resolves as LocalAI does for every capability`, async () => {
    for (const capability of capabilities) {
      const want = byCapability[capability];
      const got = await galleries.resolve(meta, capability).then(
        (resolved) => resolved.entry.name,
        (error: unknown) => {
          assert.ok(error instanceof HangarError, String(error));
          return null;
        },
      );
      assert.equal(got, want, `${meta} on ${capability}`);
    }
  });
}

test('concrete builds are compatible by the tokens in their name and uri, as LocalAI judges them', async () => {
  const table: [string, Capability, boolean][] = [
    ['cpu-llama-cpp', 'default', true],
    ['cuda12-llama-cpp', 'default', false],
    ['cuda13-llama-cpp', 'nvidia-cuda-12', true],
    ['cuda12-llama-cpp', 'nvidia-l4t', true],
    ['nvidia-l4t-arm64-llama-cpp', 'nvidia', false],
    ['rocm-llama-cpp', 'amd', true],
    ['rocm-llama-cpp', 'intel', false],
    ['intel-sycl-f16-llama-cpp', 'intel', true],
    ['vulkan-llama-cpp', 'default', true],
    ['metal-llama-cpp', 'darwin-x86', true],
    ['metal-llama-cpp', 'default', false],
    ['cpu-mlx', 'default', false],
    ['cuda12-llama-cpp', 'disable', true],
  ];
  for (const [name, capability, compatible] of table) {
    assert.equal(isEntryCompatible(await galleries.find(name), capability), compatible, `${name} on ${capability}`);
  }
  assert.equal(isEntryCompatible(await galleries.find('transformers'), 'default'), false, 'a meta with no build for this machine');
  assert.equal(isEntryCompatible(await galleries.find('vllm'), 'default'), true, 'a meta with a cpu build');
});
