// The GPU memory each supervised process of the selected node holds, where the vendor's tool reports it per process
// (nvidia-smi); read while the Processes view is open, at the pace CPU and memory are.
import { useEffect, useState } from 'react';
import { selectedNode } from './node.ts';
import { bridge } from './session.ts';

/** model -> bytes; null while unknown or when no tool of the node reports memory per process (`refreshMs` null: not read). */
export function useProcessVram(refreshMs: number | null): Map<string, number> | null {
  const [vram, setVram] = useState<Map<string, number> | null>(null);
  useEffect(() => {
    if (refreshMs === null) return setVram(null);
    let live = true;
    const read = () =>
      bridge()
        .resources({ node: selectedNode() })
        .then((r) => live && setVram(r.gpuTools.includes('nvidia-smi') ? new Map(r.processes.map((p) => [p.model, p.vramBytes])) : null))
        .catch(() => undefined);
    void read();
    const timer = setInterval(() => void read(), refreshMs);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [refreshMs]);
  return vram;
}
