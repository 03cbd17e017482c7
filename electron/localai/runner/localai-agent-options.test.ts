// The agent's LocalAI options as a user mistypes them: each refused in one readable line with the README's exit status
// (a malformed value 2, a file or directory that is not there 3 or 6 as for Hangar's other files), never a raw errno.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { spawn } from 'node:child_process';
import { hangar, startAgent } from '../../agent/test-agent.ts';
import { tempDir } from '../../core/testing/fixtures.ts';

describe("the agent's LocalAI options", () => {
  let root: string;
  /** The agent with these options: how it exited, or null if it started serving (then it is stopped). */
  const agent = async (...args: string[]) => {
    const child = spawn(process.execPath, ['dist/agent/cli.js', 'agent', '--home', join(root, 'home'), '--listen', '127.0.0.1:0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.once('data', () => child.kill('SIGTERM'));
    const [code] = (await once(child, 'exit')) as [number | null];
    return { code: code === 0 || code === 143 ? null : code, stderr };
  };

  before(async () => {
    root = await tempDir('localai-options');
  });

  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  test('a malformed --localai-url or --localai-frontend exits 2, as a malformed --localai-releases does', async () => {
    const releases = await agent('--localai-releases', '127.0.0.1:40677');
    assert.deepEqual([releases.code, releases.stderr], [2, 'hangar: --localai-releases wants an http(s) URL, got "127.0.0.1:40677"\n']);
    const url = await agent('--localai-url', 'localhost:8080');
    assert.deepEqual([url.code, url.stderr], [2, 'hangar: --localai-url wants an http(s) URL, got "localhost:8080"\n']);
    const frontend = await agent('--localai-frontend', 'frontend:8080', '--localai-nats', 'nats://127.0.0.1:4222');
    assert.deepEqual([frontend.code, frontend.stderr], [2, 'hangar: --localai-frontend wants an http(s) URL, got "frontend:8080"\n']);
  });

  test('an API key file that is not there is named, with no errno', async () => {
    const file = join(root, 'missing.key');
    const missing = await agent('--localai-url', 'http://127.0.0.1:8080', '--localai-api-key-file', file);
    assert.deepEqual([missing.code, missing.stderr], [6, `hangar: the LocalAI API key file ${file} does not exist\n`]);
  });

  test('--localai-bin that is not there, or a directory, says so at the start (3, 6), not as a spawn error', async () => {
    const dir = join(root, 'bin-dir');
    await mkdir(dir);
    const plain = join(root, 'not-executable');
    await writeFile(plain, '#!/bin/sh\n');
    await chmod(plain, 0o644);
    const cases: Array<[string, number, string]> = [
      ['/nonexistent/local-ai', 3, 'hangar: there is no LocalAI binary at /nonexistent/local-ai (hangar agent --localai-bin)\n'],
      [dir, 6, `hangar: ${dir} is a directory, not an executable file (hangar agent --localai-bin)\n`],
      [plain, 6, `hangar: ${plain} is not executable (hangar agent --localai-bin): chmod +x ${plain}\n`],
    ];
    for (const [binary, code, said] of cases) {
      const running = await startAgent(join(root, 'bin-home'), null, ['--localai-bin', binary]);
      try {
        const start = await hangar(running, 'localai', 'start');
        assert.deepEqual([start.code, start.stderr], [code, said]);
      } finally {
        running.child.kill('SIGTERM');
        await once(running.child, 'exit');
      }
    }
  });

  test('a --localai-models whose parent does not exist is refused (3), not made', async () => {
    const models = join(root, 'nowhere', 'models');
    const refused = await agent('--localai-models', models);
    assert.deepEqual([refused.code, refused.stderr], [3, `hangar: --localai-models ${models}: there is no directory ${join(root, 'nowhere')} to make it in\n`]);
  });
});
