// Stand-ins for the GPU vendors' tools, for tests: scripts named nvidia-smi and rocm-smi that print what the real ones
// print for the queries Hangar makes (nvidia-smi's CSV without header or units; rocm-smi's --json, bytes as strings,
// and its CSV). Each sits in a folder of its own, to put on a node's PATH; nvidia-smi's per-process lines come from
// the file $FAKE_GPU_APPS names.
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const NVIDIA_SMI = `#!/bin/sh
case "$*" in
  *--query-compute-apps=pid,used_memory*) cat "$FAKE_GPU_APPS" 2>/dev/null ;;
  *--query-gpu=index,name,memory.total,memory.used,utilization.gpu*) echo "0, NVIDIA GeForce RTX 4090, 24564, 1024, 7" ;;
  *--query-gpu=memory.total*) echo "24564" ;;
  *) echo "unexpected: $*" >&2; exit 2 ;;
esac
`;

const ROCM_SMI = `#!/bin/sh
case "$*" in
  *--json*) echo '{"card0": {"Card series": "Radeon RX 7900 XTX", "Card model": "0x744c", "Card vendor": "Advanced Micro Devices, Inc. [AMD/ATI]", "VRAM Total Memory (B)": "25753026560", "VRAM Total Used Memory (B)": "2147483648", "GPU use (%)": "35"}, "system": {"Driver version": "6.8.5"}}' ;;
  *--csv*) printf 'device,VRAM Total Memory (B),VRAM Total Used Memory (B)\\ncard0,25753026560,2147483648\\n' ;;
  *) echo "unexpected: $*" >&2; exit 2 ;;
esac
`;

/** The folders holding a fake nvidia-smi and a fake rocm-smi. */
export async function fakeGpuTools(root: string): Promise<{ nvidia: string; amd: string }> {
  const dirs = { nvidia: join(root, 'nvidia-tools'), amd: join(root, 'amd-tools') };
  for (const [dir, name, script] of [[dirs.nvidia, 'nvidia-smi', NVIDIA_SMI], [dirs.amd, 'rocm-smi', ROCM_SMI]] as const) {
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, name), script);
    await chmod(join(dir, name), 0o755);
  }
  return dirs;
}
