// A supervisor's stop of a backend with children, and the LocalAI server link's search for LocalAI's processes,
// done once through the platform layer HANGAR_PLATFORM chooses, so an strace of this process shows what it reads
// itself (no-proc.test.ts): its pid goes to stdout first. Then one JSON line: what the stop found and left.
import { join } from 'node:path';
import { currentPlatform } from '../../../core/platform/index.ts';
import { alive } from '../../../core/supervisor/signals.ts';
import { Supervisor } from '../../../core/supervisor/supervisor.ts';
import { makeHome, startUpstream, writeRelayBackend, writeScriptBackend } from '../../../core/supervisor/test-helpers.ts';
import { findServerProcesses, serverListener } from '../processes.ts';

console.log(process.pid);
const platform = currentPlatform();
const home = makeHome();
const upstream = await startUpstream(home.root);
const target = { name: 'forker', dir: join(home.backendsDir, 'forker') };
writeRelayBackend(target.dir, upstream.address);
// A child in the backend's group, and one that leaves its group and session (setsid), as some backends do.
writeScriptBackend(target.dir, [
  'sleep 300 </dev/null >/dev/null 2>&1 &',
  'setsid sleep 300 </dev/null >/dev/null 2>&1 &',
  `RELAY_UPSTREAM=${upstream.address} exec perl "$(dirname "$0")/relay.pl" "$@"`,
].join('\n'));
const supervisor = new Supervisor({ ...home, runtimeEnv: { HANGAR_NODE: process.execPath }, stopGraceMs: 1000 });
await supervisor.start();
const { process: backend } = await supervisor.ensureRunning(target, 'a');
const leader = { pid: backend.pid, startTime: (await platform.process(backend.pid))!.startTime, cgroup: null };
let [tree] = await platform.trees([leader]);
for (const end = Date.now() + 5000; tree!.length < 3 && Date.now() < end; [tree] = await platform.trees([leader])) await new Promise((r) => setTimeout(r, 50));
const search = await findServerProcesses(platform, home.backendsDir, new Set(), null);
const server = await serverListener(platform, `http://127.0.0.1:${backend.port}`);
await supervisor.stop('a');
const left = await alive(platform, tree!);
await supervisor.close({ stopAll: true });
await upstream.stop();
home.cleanup();
console.log(JSON.stringify({ layer: platform.name, members: tree!.length, left: left.length, found: search.found.length, server: server !== null && 'pid' in server && server.pid === backend.pid }));
