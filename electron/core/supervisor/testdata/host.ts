// A stand-in host for the parent-watch test: starts a supervisor and one backend, prints the backend's pid,
// then idles until it is killed. Usage: node --import tsx host.ts '<SupervisorOptions JSON>' '<BackendTarget JSON>'
import { Supervisor } from '../supervisor.ts';

const [options, target] = process.argv.slice(2).map((arg) => JSON.parse(arg));
const supervisor = new Supervisor({ ...options, runtimeEnv: { HANGAR_NODE: process.execPath } });
await supervisor.start();
const { process: backend } = await supervisor.ensureRunning(target, 'host-model');
process.stdout.write(`${backend.pid}\n`);
setInterval(() => undefined, 60_000);
