// Every question of the platform layer, asked once through the layer HANGAR_PLATFORM chooses, so an strace of this
// process shows what it reads itself: its pid goes to stdout first, so the tracer can tell its own threads apart.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { currentPlatform } from '../index.ts';

console.log(process.pid);
const layer = currentPlatform();
const dir = mkdtempSync(join(tmpdir(), 'hangar-workout-'));
const server = createServer().listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const port = (server.address() as { port: number }).port;
const table = await layer.processes();
const cwds = await layer.cwds();
const listener = await layer.listener(port);
const usage = await layer.usageSampler().sample([{ pid: process.pid, startedAt: new Date().toISOString() }]);
const machine = await layer.machine(dir);
const [members = []] = await layer.trees([{ pid: process.pid, startTime: (await layer.process(process.pid))!.startTime, cgroup: null }]);
server.close();
rmSync(dir, { recursive: true });
console.log(JSON.stringify({ layer: layer.name, processes: table.length, cwds: cwds.size, listener, usage: usage.size, memory: machine.memory !== null, members: members.length }));
