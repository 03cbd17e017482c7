// Device-local VRAM from `vulkaninfo --text`, read the way LocalAI reads it (pkg/xsysinfo/gpu.go): per `GPUn:`
// section, the sizes of the memory heaps flagged MEMORY_HEAP_DEVICE_LOCAL_BIT; CPU "devices" (llvmpipe) count nothing.

export function parseVulkanInfo(text: string): number {
  let total = 0;
  let gpu = { cpu: false, bytes: 0 };
  let heap: { size: number; local: boolean } | null = null;
  let inHeaps = false;
  const endHeap = () => {
    if (heap?.local) gpu.bytes += heap.size;
    heap = null;
  };
  const endGpu = () => {
    endHeap();
    if (!gpu.cpu) total += gpu.bytes;
  };
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (/^GPU\d+:$/.test(line)) {
      endGpu();
      gpu = { cpu: false, bytes: 0 };
      inHeaps = false;
    } else if (line.startsWith('deviceType')) {
      gpu.cpu = valueOf(line) === 'PHYSICAL_DEVICE_TYPE_CPU';
    } else if (line.startsWith('memoryHeaps:')) {
      inHeaps = true;
    } else if (line.startsWith('memoryTypes:')) {
      endHeap();
      inHeaps = false;
    } else if (inHeaps && line.startsWith('memoryHeaps[')) {
      endHeap();
      heap = { size: 0, local: false };
    } else if (heap && line.startsWith('size')) {
      heap.size = Number(valueOf(line).split(/\s+/)[0]) || 0;
    } else if (heap && line.includes('MEMORY_HEAP_DEVICE_LOCAL_BIT')) {
      heap.local = true;
    }
  }
  endGpu();
  return total;
}

function valueOf(line: string): string {
  const at = line.indexOf('=');
  return at < 0 ? '' : line.slice(at + 1).trim();
}
