// A LocalAI distributed cluster in the UI: a real agent pointed at a stand-in LocalAI frontend and two stand-in workers
// on a real nats-server. The workers are in the sidebar beside the Hangar node, marked as LocalAI workers; a worker's
// backends, an upgrade with the worker's own progress, and the actions that need Hangar on the machine, off with why.
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNats, type NatsServer } from '../electron/cluster/test-nats.ts';
import { startGalleryServer, type GalleryServer } from '../electron/localai/testing/gallery-server.ts';
import { startStandInFrontend, type StandInFrontend } from '../electron/localai/testing/standin-frontend.ts';
import { StandInWorker } from '../electron/localai/testing/standin-worker.ts';
import { startAgent, type RunningAgent } from './fixtures/agent.ts';
import { copyStarterGallery } from './fixtures/gallery.ts';
import { collectErrors, docShot, seriousViolations } from './fixtures/page.ts';

test.describe.configure({ mode: 'serial' });

const API_KEY = 'admin-key-0123456789';
const TOKEN = 'registration-token-0123456789';
const NEEDS_AGENT = "needs Hangar on the worker's machine: run a Hangar agent beside this worker to get them";

let root: string;
let nats: NatsServer;
let gallery: GalleryServer;
let frontend: StandInFrontend;
const workers: StandInWorker[] = [];
let agent: RunningAgent;
let page: Page;
let pageErrors: string[];

test.beforeAll(async ({ browser }) => {
  root = await mkdtemp(join(tmpdir(), 'hangar-e2e-localai-'));
  nats = await startNats();
  // Big enough, and slow enough, that the worker's download shows its progress.
  gallery = await startGalleryServer([{ name: 'whisper', version: '1.0.0', bytes: 128 * 1024 }], { chunkDelayMs: 120 });
  frontend = await startStandInFrontend({ apiKey: API_KEY, registrationToken: TOKEN, galleries: [{ url: gallery.indexUrl, name: 'localai' }], staleMs: 2000, checkMs: 200 });
  for (const [name, gpu, basePort] of [['gpu-a', 'nvidia', 25100], ['gpu-b', '', 25110]] as const) {
    const worker = new StandInWorker({
      name,
      nats: nats.url,
      frontend: frontend.url,
      registrationToken: TOKEN,
      backendsDir: join(root, name),
      basePort,
      heartbeatMs: 300,
      indexCacheMs: 0,
      ...(gpu && { gpuVendor: gpu, totalVram: 24 * 1024 ** 3, capability: 'nvidia' }),
    });
    await worker.start();
    workers.push(worker);
  }
  const keyFile = join(root, 'api-key');
  await writeFile(keyFile, API_KEY, { mode: 0o600 });
  const own = await copyStarterGallery(join(root, 'gallery'));
  agent = await startAgent({
    home: join(root, 'home'),
    gallery: own.index,
    args: ['--name', 'desk', '--ports', '23910-23919', '--localai-frontend', frontend.url, '--localai-api-key-file', keyFile, '--localai-nats', nats.url, '--localai-poll', '300', '--localai-reload-wait', '2000'],
  });
  await agent.cli('install', 'echo');
  for (const name of ['gpu-a', 'gpu-b']) await agent.cli('install', 'whisper', '--on', name);
  page = await (await browser.newContext({ viewport: { width: 1280, height: 760 } })).newPage();
  pageErrors = collectErrors(page);
  await page.goto(agent.pageUrl);
});

test.afterAll(async () => {
  await page?.close();
  await agent?.stop();
  for (const worker of workers) await worker.stop();
  await frontend?.close();
  await gallery?.close();
  await nats?.stop();
  await rm(root, { recursive: true, force: true });
});

test('the sidebar lists the LocalAI workers beside the Hangar node, each marked, with its GPU and capability', async () => {
  await expect(page.getByTestId('node-This machine')).toBeVisible();
  const a = page.getByTestId('node-gpu-a');
  await expect(a.getByTestId('node-kind')).toHaveText('LocalAI worker');
  await expect(a).toContainText('nvidia, 24 GiB VRAM');
  await expect(page.getByTestId('node-gpu-b')).toContainText('default');
  await expect(a.getByLabel('online')).toBeVisible();
  await expect(page.getByTestId('node-gpu-b').getByTestId('node-kind')).toHaveText('LocalAI worker');
  await expect(page.getByTestId('node-This machine').getByTestId('node-kind')).toHaveCount(0);
});

test("a worker's backends, and an upgrade that streams the worker's progress", async () => {
  await page.getByTestId('node-gpu-a').click();
  await page.getByTestId('nav-backends').click();
  const row = page.getByTestId('backend-row-whisper');
  await expect(row.getByTestId('backend-version')).toHaveText('1.0.0');
  await expect(page.getByTestId('worker-facts')).toContainText('healthy');

  gallery.publish([{ name: 'whisper', version: '2.0.0', bytes: 1024 * 1024 }]);
  await agent.cli('gallery', '--refresh', '--on', 'gpu-a');
  await expect(row.getByTestId('backend-available-version')).toHaveText('2.0.0');
  await row.getByTestId('action-upgrade').click();
  const dialog = page.getByRole('dialog', { name: 'Upgrade whisper?' });
  await expect(dialog.getByTestId('impact').getByRole('listitem')).toHaveText([
    "Sends backend.upgrade: the worker installs whisper 2.0.0 from the LocalAI cluster's galleries in place of 1.0.0.",
    "The worker stops every process of whisper; LocalAI's frontend starts them again on their next request.",
    'A LocalAI worker keeps no rollback target: run a Hangar agent beside this worker to get one.',
  ]);
  await dialog.getByRole('button', { name: 'Upgrade' }).click();
  // The worker's own progress events, as Hangar shows every download: bytes, percent, speed.
  await expect(row.getByTestId('job-bytes')).toContainText(/ of 1\.0 MiB · [3-9]\d%/);
  await docShot(page, 'screenshot-localai-workers');
  await expect(row.getByTestId('backend-version')).toHaveText('2.0.0', { timeout: 30_000 });
  // The upgrade stopped the backend's process; nothing asks for it, so the job says who starts it again.
  await expect(row.getByTestId('job-notice')).toContainText("whisper stopped by the upgrade and not running yet: LocalAI's frontend starts it again on the next request");
});

test('what needs Hangar on the machine stays in place, off, saying why', async () => {
  const row = page.getByTestId('backend-row-whisper');
  const rollback = row.getByTestId('action-rollback');
  await expect(rollback).toHaveAttribute('aria-disabled', 'true');
  await expect(rollback).toHaveAttribute('title', `Rollback ${NEEDS_AGENT}`);
  await expect(page.getByTestId('worker-needs-agent')).toContainText('gpu-a is a LocalAI worker: install, upgrade, delete, stop and unload go over its own protocol.');

  // LocalAI's backend.install started the backend's own process on gpu-b, which no upgrade stopped.
  await page.getByTestId('node-gpu-b').click();
  await page.getByTestId('nav-processes').click();
  const process = page.getByTestId('supervised-whisper');
  await expect(process).toContainText('running on the LocalAI worker: replica 0 at 127.0.0.1:');
  await expect(process.getByTestId('process-respawn')).toHaveAttribute('title', `Respawn ${NEEDS_AGENT}`);
  await expect(process.getByTestId('process-logs')).toHaveAttribute('title', `Logs ${NEEDS_AGENT}`);
  await expect(process.getByTestId('process-stop')).not.toHaveAttribute('aria-disabled', 'true');
  await expect(page.getByTestId('processes-scan')).toHaveAttribute('aria-disabled', 'true');
  await expect(page.getByTestId('processes-no-scan')).toHaveText(`Stale-cwd detection ${NEEDS_AGENT}.`);
  expect(await seriousViolations(page)).toEqual([]);

  await page.getByTestId('nav-settings').click();
  await expect(page.getByTestId('worker-settings')).toContainText('gpu-b is a LocalAI worker');
});

test("the Cluster view holds the workers: each card says what it is, its state, LocalAI's VRAM, and what is off and why; their column in the matrix", async () => {
  await page.getByTestId('nav-cluster').click();
  const card = page.getByTestId('node-card-gpu-a');
  await expect(card.getByRole('heading', { name: 'gpu-a' })).toBeVisible();
  await expect(card.getByTestId('node-kind')).toHaveText('LocalAI worker');
  await expect(card.getByLabel('online')).toBeVisible();
  await expect(card.getByTestId('node-card-status')).toHaveText('127.0.0.1:25100 · nvidia');
  await expect(card.getByRole('meter', { name: /^VRAM: nvidia: 24 GiB free of 24 GiB, as LocalAI reports it$/ })).toBeVisible();
  await expect(page.getByTestId('node-card-gpu-b')).toContainText('LocalAI reports no GPU memory for it.');
  for (const action of ['cordon', 'drain']) {
    await expect(card.getByTestId(action)).toBeDisabled();
    await expect(card.getByTestId(action)).toHaveAttribute('title', /^A LocalAI worker is drained in LocalAI/);
  }
  await expect(card.getByTestId('node-card-off').getByRole('listitem')).toHaveText([
    "Cordon and drain: in LocalAI's admin pages.",
    'Rollback, respawn, logs and stale-cwd detection: run a Hangar agent beside this worker to get them.',
  ]);
  // LocalAI's protocol reports no working directories: the stale count is unknown, not 0.
  await expect(card.getByTestId('node-counts')).toContainText('stale?');
  const hangar = page.getByTestId('node-card-This machine');
  await expect(hangar.getByTestId('node-kind')).toHaveCount(0);
  await expect(hangar.getByTestId('node-card-off')).toHaveCount(0);
  await expect(hangar.getByTestId('drain')).toBeEnabled();
  const row = page.getByTestId('matrix-whisper');
  await expect(row).toContainText('2.0.0');
  await expect(page.getByTestId('cluster-matrix').getByRole('columnheader', { name: /gpu-b.*LocalAI worker/ })).toBeVisible();
  await docShot(page, 'screenshot-localai-workers-cluster');
  expect(await seriousViolations(page)).toEqual([]);

  // Drained from LocalAI's admin pages: the card says so in LocalAI's words, dashed, its actions off, until resumed.
  const id = frontend.nodes().find((n) => n.name === 'gpu-a')!.id;
  frontend.setStatus(id, 'draining');
  await expect(card.getByTestId('node-card-status')).toHaveText('draining in LocalAI (it takes no new work)');
  await expect(card).toHaveClass(/away/);
  frontend.setStatus(id, 'healthy');
  await expect(card.getByTestId('node-card-status')).toHaveText('127.0.0.1:25100 · nvidia');
});

test('a stopped model leaves the worker; Settings say which LocalAI cluster the agent manages', async () => {
  await page.getByTestId('nav-processes').click();
  const process = page.getByTestId('supervised-whisper');
  await process.getByTestId('process-stop').click();
  await page.getByRole('dialog', { name: 'Stop whisper?' }).getByRole('button', { name: 'Stop' }).click();
  await expect(process).toHaveCount(0);
  expect(workers[1]!.running()).toEqual([]);

  await page.getByTestId('node-This machine').click();
  await page.getByTestId('nav-settings').click();
  const section = page.getByTestId('localai-settings');
  await expect(section.getByTestId('localai-state')).toHaveText(`Connected to ${frontend.url}: 2 workers.`);
  await expect(section).toContainText('This agent manages the LocalAI cluster it was started with');
  await expect(section).not.toContainText(API_KEY);
  expect(await seriousViolations(page)).toEqual([]);
  expect(pageErrors).toEqual([]);
});

test('while the agent cannot be reached the LocalAI cluster it manages is unknown, and connected again once it is back', async () => {
  const state = page.getByTestId('localai-settings').getByTestId('localai-state');
  await expect(state).toHaveText(`Connected to ${frontend.url}: 2 workers.`);
  await agent.stop();
  await expect(state).toHaveText(new RegExp(`^Connection to ${frontend.url.replace(/[.:/]/g, '\\$&')} unknown since the connection to the agent was lost at \\d\\d:\\d\\d:\\d\\d\\.$`));
  await agent.start();
  await expect(state).toHaveText(`Connected to ${frontend.url}: 2 workers.`);
});
