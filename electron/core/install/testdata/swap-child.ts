// Child for the crash tests: installs (or rolls back) "demo" and SIGKILLs itself when the swap reaches a step, or
// ("stopping") while the stop before the swap still waits for model m1's process, once the journal names it.
// argv: <backendsDir> <commit|rollback> <step>
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { BackendStore, type SwapHooks, type SwapStep } from '../store.ts';

const [backendsDir, action, killAt] = process.argv.slice(2) as [string, 'commit' | 'rollback', SwapStep | 'stopping'];
const store = new BackendStore(backendsDir);
const stopped = [{ model: 'm1', backend: 'demo' }];
const hooks: SwapHooks = {
  onStep(step) {
    if (step === killAt) process.kill(process.pid, 'SIGKILL');
  },
  note: () => ({ job: null, verb: 'upgrade', from: 'old', to: 'new', stopped }),
  async beforeSwap(_live, noteKnown) {
    if (killAt !== 'stopping') return;
    noteKnown();
    while (!existsSync(join(backendsDir, '.hangar', 'journal', 'demo.json'))) await delay(1);
    process.kill(process.pid, 'SIGKILL');
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
