// A host for the pid-reuse test: a first supervisor starts one backend per model and leaves them running; a second,
// on the same table, adopts them (so nothing but the table and /proc tells it that a process is still its own), and
// then stops a model on each `stop MODEL` line read from stdin. This process stays the backends' parent: it reaps
// one that is killed, so its pid is free at once for the next process.
// Usage: node --import tsx adopting-host.ts '<SupervisorOptions JSON>' '<BackendTarget JSON>' MODEL...
// Prints one JSON line { MODEL: { pid, startTime } }, then "stopped MODEL" after each stop.
import { createInterface } from 'node:readline';
import { Supervisor } from '../supervisor.ts';
import { processStartTime } from '../identity.ts';

const [options, target] = process.argv.slice(2, 4).map((arg) => JSON.parse(arg));
const models = process.argv.slice(4);
const settings = { ...options, runtimeEnv: { HANGAR_NODE: process.execPath } };
const first = new Supervisor(settings);
await first.start();
for (const model of models) await first.ensureRunning(target, model);
await first.close({ stopAll: false });
// Its health watch stays quiet: what it knows of each process is what adoption read.
const heir = new Supervisor({ ...settings, healthEveryMs: 3_600_000, backstopMs: 3_600_000 });
await heir.start();
const adopted = Object.fromEntries(models.map((model) => {
  const pid = heir.get(model)!.pid;
  return [model, { pid, startTime: processStartTime(pid) }];
}));
process.stdout.write(`${JSON.stringify(adopted)}\n`);
for await (const line of createInterface({ input: process.stdin })) {
  const [verb, model] = line.split(' ');
  if (verb === 'stop' && model) {
    await heir.stop(model);
    process.stdout.write(`stopped ${model}\n`);
  }
}
