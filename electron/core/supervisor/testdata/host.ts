// A stand-in host for the parent-watch tests: starts a supervisor and one backend and prints the backend's pid.
// Mode 'idle' then waits to be killed; mode 'leave' closes with { stopAll: false } and lets the process end by
// itself. Usage: node --import tsx host.ts idle|leave '<SupervisorOptions JSON>' '<BackendTarget JSON>'
import { Supervisor } from '../supervisor.ts';

const [mode, options, target] = [process.argv[2], ...process.argv.slice(3).map((arg) => JSON.parse(arg))];
const supervisor = new Supervisor({ ...options, runtimeEnv: { HANGAR_NODE: process.execPath } });
await supervisor.start();
const { process: backend } = await supervisor.ensureRunning(target, 'host-model');
process.stdout.write(`${backend.pid}\n`);
if (mode === 'leave') await supervisor.close({ stopAll: false });
else setInterval(() => undefined, 60_000);
