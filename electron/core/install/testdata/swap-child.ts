// Child for the crash tests: installs (or rolls back) "demo" and SIGKILLs itself when the swap reaches a step.
// argv: <backendsDir> <commit|rollback> <step>
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BackendStore, type SwapStep } from '../store.ts';

const [backendsDir, action, killAt] = process.argv.slice(2) as [string, 'commit' | 'rollback', SwapStep];
const store = new BackendStore(backendsDir);
const hooks = {
  onStep(step: SwapStep) {
    if (step === killAt) process.kill(process.pid, 'SIGKILL');
  },
};

if (action === 'commit') {
  const staged = await store.stage('demo');
  await writeFile(join(staged, 'run.sh'), '#!/bin/sh\n');
  await writeFile(join(staged, 'VERSION'), 'new');
  await mkdir(join(staged, 'lib'));
  await writeFile(join(staged, 'lib', 'data'), 'new data');
  await store.validate('demo', staged);
  await (await store.commit('demo', staged, hooks)).settle();
} else {
  await (await store.rollback('demo', hooks)).settle();
}
