// A host for the crash tests of the health gate: a LocalNode on a home, driven by lines on stdin, telling every job
// and process event as a JSON line on stdout, so a test can SIGKILL it at an exact point of a job (tests only).
// Usage: node --import tsx node-host.ts HOME GALLERY. Commands: "install NAME", "upgrade NAME", "load BACKEND MODEL".
// Prints {"ready":true} once started, {"job":JobView} and {"process":ProcessView} on events, {"loaded":LoadResult}.
import { createInterface } from 'node:readline';
import { LocalNode } from '../node.ts';

const [home, gallery] = process.argv.slice(2) as [string, string];
const node = new LocalNode({ home, galleries: [{ name: 'test', location: gallery }], runtimeEnv: { HANGAR_NODE: process.execPath } });
const say = (value: object) => process.stdout.write(`${JSON.stringify(value)}\n`);
node.on('event', (event) => {
  if (event.type === 'job') say({ job: event.job });
  if (event.type === 'process') say({ process: event.process });
});
await node.start();
// As a host does once it serves: a shell waits for the next start.
await node.warmUp();
say({ ready: true });
for await (const line of createInterface({ input: process.stdin })) {
  const [verb, first = '', second = ''] = line.split(' ');
  if (verb === 'install') await node.install({ node: 'local', name: first });
  if (verb === 'upgrade') await node.upgrade({ node: 'local', name: first });
  if (verb === 'load') say({ loaded: await node.load({ node: 'local', backend: first, model: second }) });
}
