// Notifications outlive the agent: against a real agent killed while an upgrade was fetching and started again on
// its home, the page lists the jobs of the run before, and the upgrade as interrupted, not running.
import { expect, test } from '@playwright/test';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { JobView } from '../shared/types.ts';
import { startAgent, type RunningAgent } from './fixtures/agent.ts';
import { copyStarterGallery } from './fixtures/gallery.ts';
import { collectErrors } from './fixtures/page.ts';
import { serveSlowly, type SlowServer } from './fixtures/slow-server.ts';

const run = promisify(execFile);

let root: string;
let agent: RunningAgent;
let slow: SlowServer;

test.beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'hangar-e2e-restart-'));
  const gallery = await copyStarterGallery(join(root, 'gallery'));
  agent = await startAgent({ home: join(root, 'home'), gallery: gallery.index });
  await agent.cli('install', 'echo');
  // 1.1.0 is 2 MiB of random bytes served at 128 KiB/s: its upgrade is still fetching when the agent is killed.
  const source = join(root, 'echo-1.1.0');
  await cp(join(gallery.dir, 'echo'), source, { recursive: true });
  await writeFile(join(source, 'VERSION'), '1.1.0\n');
  await writeFile(join(source, 'weights.bin'), randomBytes(2 << 20));
  await run('tar', ['-czf', join(root, 'echo-1.1.0.tar.gz'), '-C', source, '.']);
  slow = await serveSlowly(join(root, 'echo-1.1.0.tar.gz'), 128 * 1024);
  await gallery.updateEntry('echo', { uri: `${slow.url}/echo-1.1.0.tar.gz`, version: '1.1.0' });
});

async function keptJobs(): Promise<JobView[]> {
  const text = await readFile(join(root, 'home', 'state', 'jobs.json'), 'utf8').catch(() => '{"jobs":[]}');
  return (JSON.parse(text) as { jobs: JobView[] }).jobs;
}

test.afterAll(async () => {
  await agent?.stop();
  await slow?.close();
  await rm(root, { recursive: true, force: true });
});

test('after the agent is killed and started again, the notifications list its jobs, and the one it died in as interrupted', async ({ page }) => {
  const errors = collectErrors(page);
  await expect.poll(async () => (JSON.parse(await agent.cli('ls', '--json')) as { upgradable: boolean }[])[0]?.upgradable, { timeout: 15_000 }).toBe(true);
  void agent.cli('upgrade', 'echo').catch(() => undefined);
  await expect.poll(async () => (JSON.parse(await agent.cli('jobs', '--json')) as JobView[]).some((j) => j.kind === 'upgrade' && j.phase === 'fetching' && j.bytes > 0), { timeout: 15_000 }).toBe(true);
  // The job's history is written to disk (fsynced) after the phase is shown: a SIGKILL in between truly leaves the
  // phase before, so the kill waits until the kept history says fetching.
  await expect.poll(async () => (await keptJobs()).some((j) => j.kind === 'upgrade' && j.phase === 'fetching'), { timeout: 15_000 }).toBe(true);
  await agent.kill();
  await agent.start();

  await page.goto(agent.pageUrl);
  await page.getByTestId('nav-notifications').click();
  const notices = page.getByTestId('notifications');
  await expect(notices).toContainText('install echo finished');
  await expect(notices).toContainText('upgrade echo failed: interrupted: the agent stopped while the upgrade of echo was fetching; it did not finish');
  expect(errors).toEqual([]);
});
