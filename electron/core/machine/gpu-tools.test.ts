import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseNvidiaApps, parseNvidiaGpus, parseRocmGpus, parseXpuDevices } from './gpu-tools.ts';

const MiB = 1024 * 1024;

test("nvidia-smi's CSV: MiB and percent; a name with commas; [N/A] is unknown, not zero", () => {
  const csv = '0, NVIDIA GeForce RTX 4090, 24564, 1024, 7\n1, NVIDIA A100-SXM4-80GB, 81920, 0, 0\n2, NVIDIA GB10, Grace, [N/A], [N/A], [Not Supported]\n';
  assert.deepEqual(parseNvidiaGpus(csv), [
    { vendor: 'nvidia', index: 0, model: 'NVIDIA GeForce RTX 4090', vramTotalBytes: 24564 * MiB, vramUsedBytes: 1024 * MiB, utilization: 7 },
    { vendor: 'nvidia', index: 1, model: 'NVIDIA A100-SXM4-80GB', vramTotalBytes: 81920 * MiB, vramUsedBytes: 0, utilization: 0 },
    { vendor: 'nvidia', index: 2, model: 'NVIDIA GB10, Grace', vramTotalBytes: null, vramUsedBytes: null, utilization: null },
  ]);
  assert.deepEqual(parseNvidiaGpus(''), []);
});

test("nvidia-smi's compute apps: each pid's memory, summed over GPUs; unreadable lines skipped", () => {
  const apps = parseNvidiaApps('4242, 512\n4242, 256\n5151, [N/A]\nnot a line\n6161, 100\n');
  assert.deepEqual([...apps], [[4242, 768 * MiB], [6161, 100 * MiB]]);
});

test("rocm-smi's JSON: bytes as strings, any key case, warnings before it, the system entry skipped", () => {
  const text = 'WARNING: some driver note\n' + JSON.stringify({
    card0: { 'GPU use (%)': '12', 'VRAM Total Memory (B)': '17163091968', 'VRAM Total Used Memory (B)': '1073741824', 'Card series': 'Radeon RX 7900 XTX', 'Card model': '0x744c' },
    card1: { 'GPU use (%)': 'N/A', 'VRAM Total Memory (B)': '8573157376', 'VRAM Total Used Memory (B)': '0', 'Card Series': 'N/A', 'Card Model': '0x7590' },
    system: { 'Driver version': '6.8.5' },
  });
  assert.deepEqual(parseRocmGpus(text), [
    { vendor: 'amd', index: 0, model: 'Radeon RX 7900 XTX', vramTotalBytes: 17163091968, vramUsedBytes: 1073741824, utilization: 12 },
    { vendor: 'amd', index: 1, model: '0x7590', vramTotalBytes: 8573157376, vramUsedBytes: 0, utilization: null },
  ]);
  assert.deepEqual(parseRocmGpus('not json'), []);
});

test("xpu-smi's discovery: name and memory, a number or a string of one", () => {
  const text = JSON.stringify({ device_list: [{ device_id: 0, device_name: 'Intel(R) Arc(TM) A770 Graphics', memory_physical_size_byte: '17079205888' }, { device_id: 1 }] });
  assert.deepEqual(parseXpuDevices(text), [
    { vendor: 'intel', index: 0, model: 'Intel(R) Arc(TM) A770 Graphics', vramTotalBytes: 17079205888, vramUsedBytes: null, utilization: null },
    { vendor: 'intel', index: 1, model: 'Intel GPU', vramTotalBytes: null, vramUsedBytes: null, utilization: null },
  ]);
});
