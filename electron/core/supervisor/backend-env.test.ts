// The environment LocalAI gives its backends, seen from a real backend; and LocalAI's parent watch, which Hangar
// turns off so a kept backend outlives its host and is re-adopted.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { isAlive } from './identity.ts';
import { Supervisor, type BackendTarget } from './supervisor.ts';
import { makeHome, writeEcho, type Home } from './test-helpers.ts';
import { TS_NODE } from '../testing/ts-node.ts';

const runtimeEnv = { HANGAR_NODE: process.execPath };

async function gone(pid: number, withinMs = 5000): Promise<boolean> {
  for (const deadline = Date.now() + withinMs; Date.now() < deadline; await delay(50)) if (!isAlive(pid)) return true;
  return !isAlive(pid);
}

describe('backend environment', () => {
  let home: Home;
  let echo: BackendTarget;
  before(async () => {
    home = makeHome();
    echo = { name: 'echo', dir: join(home.backendsDir, 'echo') };
    await writeEcho(echo.dir, '1.0.0');
  });
  after(() => home.cleanup());

  test('a backend sees the parent watch off, the Hugging Face caches on the models path, and its Vulkan ICDs', async () => {
    const dir = join(home.backendsDir, 'envdump');
    await writeEcho(dir, '1.0.0');
    mkdirSync(join(dir, 'vulkan', 'icd.d'), { recursive: true });
    for (const name of ['a_icd.json', 'b_icd.json', 'notes.txt']) writeFileSync(join(dir, 'vulkan', 'icd.d', name), '{}');
    writeFileSync(join(dir, 'run.sh'), '#!/bin/sh\nDIR=$(cd -- "$(dirname -- "$0")" && pwd)\nenv > "$DIR/seen.env"\nexec "$HANGAR_NODE" "$DIR/server.cjs" "$@"\n', { mode: 0o755 });
    const inherited = { ...process.env };
    delete process.env.HF_HOME;
    delete process.env.TRANSFORMERS_CACHE;
    process.env.HUGGINGFACE_HUB_CACHE = '/srv/hf-chosen-by-user';
    const supervisor = new Supervisor({ ...home, runtimeEnv, portRange: [29420, 29439] });
    try {
      await supervisor.start();
      await supervisor.ensureRunning({ name: 'envdump', dir }, 'env-model');
      const seen = Object.fromEntries(readFileSync(join(dir, 'seen.env'), 'utf8').split('\n').filter(Boolean).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
      const icds = ['a_icd.json', 'b_icd.json'].map((n) => join(dir, 'vulkan', 'icd.d', n));
      assert.equal(seen.LOCALAI_BACKEND_PARENT_WATCH, 'false');
      assert.equal(seen.HF_HOME, home.modelsDir);
      assert.equal(seen.TRANSFORMERS_CACHE, home.modelsDir);
      assert.equal(seen.HUGGINGFACE_HUB_CACHE, '/srv/hf-chosen-by-user', 'a cache the user chose is kept, as LocalAI does');
      assert.deepEqual(seen.VK_DRIVER_FILES?.split(delimiter).sort(), icds);
      assert.equal(seen.VK_ICD_FILENAMES, seen.VK_DRIVER_FILES);
    } finally {
      process.env = inherited;
      await supervisor.close({ stopAll: true });
    }
  });

  test('the echo fixture watches its parent as LocalAI backends do: without the variable it dies with its parent', async () => {
    const starter = spawn(process.execPath, ['-e', `
      const c = require('node:child_process').spawn(${JSON.stringify(join(echo.dir, 'run.sh'))}, ['--addr', '127.0.0.1:0'],
        { cwd: ${JSON.stringify(echo.dir)}, detached: true, stdio: 'ignore', env: { ...process.env, HANGAR_NODE: process.execPath, LOCALAI_BACKEND_PARENT_WATCH: '' } });
      console.log(c.pid); setTimeout(() => process.exit(0), 1500);`], { stdio: ['ignore', 'pipe', 'inherit'] });
    const [line] = (await once(createInterface({ input: starter.stdout! }), 'line')) as [string];
    const pid = Number(line);
    await once(starter, 'exit');
    assert.equal(await gone(pid), true, 'an orphaned backend with the watch on exits by itself');
  });

  test('a kept echo backend survives a clean host exit and is re-adopted', async () => {
    const stateDir = join(home.root, 'state-keep');
    const options = { backendsDir: home.backendsDir, modelsDir: home.modelsDir, stateDir, portRange: [29440, 29459] };
    const host = spawn(process.execPath, [...TS_NODE, join(import.meta.dirname, 'testdata/host.ts'), 'leave', JSON.stringify(options), JSON.stringify(echo)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = once(host, 'exit');
    const [line] = (await once(createInterface({ input: host.stdout! }), 'line')) as [string];
    const pid = Number(line);
    try {
      assert.deepEqual(await exited, [0, null]);
      await delay(1500); // three of the watch's polls: it would have exited by now had the variable not been set
      assert.equal(isAlive(pid), true, 'the kept backend died with its host');
      const heir = new Supervisor({ ...options, runtimeEnv, portRange: [29440, 29459] });
      await heir.start();
      try {
        assert.equal(heir.get('host-model')?.pid, pid);
        assert.equal((await heir.load(echo, 'host-model')).reused, true);
      } finally {
        await heir.close({ stopAll: true });
      }
    } finally {
      if (isAlive(pid)) process.kill(-pid, 'SIGKILL');
    }
    assert.equal(await gone(pid), true);
  });
});
