// The GPU vendors' tools on PATH (nvidia-smi, rocm-smi, xpu-smi), read side by side: what either layer answers on
// Linux, where the drivers ship them.
import { NVIDIA_APPS, NVIDIA_GPUS, ROCM_GPUS, XPU_DEVICES, onPath, parseNvidiaApps, parseNvidiaGpus, parseRocmGpus, parseXpuDevices, runTool } from '../machine/gpu-tools.ts';
import type { GpuView } from '../../../shared/types.ts';
import type { GpuReading } from './types.ts';

interface Tool {
  command: string;
  read(env: NodeJS.ProcessEnv): Promise<{ gpus: GpuView[]; byPid?: Map<number, number> }>;
}

const TOOLS: Tool[] = [
  {
    command: 'nvidia-smi',
    read: async (env) => {
      const [gpus, apps] = await Promise.all([runTool('nvidia-smi', NVIDIA_GPUS, env), runTool('nvidia-smi', NVIDIA_APPS, env).catch(() => '')]);
      return { gpus: parseNvidiaGpus(gpus), byPid: parseNvidiaApps(apps) };
    },
  },
  { command: 'rocm-smi', read: async (env) => ({ gpus: parseRocmGpus(await runTool('rocm-smi', ROCM_GPUS, env)) }) },
  { command: 'xpu-smi', read: async (env) => ({ gpus: parseXpuDevices(await runTool('xpu-smi', XPU_DEVICES, env)) }) },
];

export async function readVendorGpus(env: NodeJS.ProcessEnv): Promise<GpuReading> {
  const present = TOOLS.filter((tool) => onPath(tool.command, env));
  const answers = await Promise.allSettled(present.map((tool) => tool.read(env)));
  const reading: GpuReading = { gpus: [], tools: [], problem: null, byPid: new Map() };
  const problems: string[] = [];
  for (const [i, answer] of answers.entries()) {
    if (answer.status === 'rejected') {
      problems.push((answer.reason as Error).message);
      continue;
    }
    reading.tools.push(present[i]!.command);
    reading.gpus.push(...answer.value.gpus);
    for (const [pid, bytes] of answer.value.byPid ?? []) reading.byPid.set(pid, (reading.byPid.get(pid) ?? 0) + bytes);
  }
  reading.problem = problems.length > 0 ? problems.join('; ') : null;
  return reading;
}
