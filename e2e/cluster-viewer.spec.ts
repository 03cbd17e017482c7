// The Cluster view on a viewer-only host, against two real agents on a real nats-server: the viewer has its card but
// is no node (not counted, no column of the matrix), a cordoned node is said to be passed by when a rollout asks
// first and shows skipped, cordoned (never pending) while it runs, and a pin on one node is labelled with its name.
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trustingHomes } from '../electron/cluster/test-cluster.ts';
import { startNats, type NatsServer } from '../electron/cluster/test-nats.ts';
import { startAgent, type RunningAgent } from './fixtures/agent.ts';
import { copyStarterGallery, type TestGallery } from './fixtures/gallery.ts';
import { collectErrors, shot } from './fixtures/page.ts';

test.describe.configure({ mode: 'serial' });

let root: string;
let nats: NatsServer;
const agents: Record<string, RunningAgent> = {};
const galleries: TestGallery[] = [];
let page: Page;
let pageErrors: string[];

test.beforeAll(async ({ browser }) => {
  root = await mkdtemp(join(tmpdir(), 'hangar-e2e-viewer-'));
  nats = await startNats();
  const names = ['n1', 'n2', 'watcher'];
  await trustingHomes(names.map((n) => join(root, `home-${n}`)));
  for (const [i, name] of names.entries()) {
    const gallery = await copyStarterGallery(join(root, `gallery-${name}`));
    galleries.push(gallery);
    const role = name === 'watcher' ? ['--cluster-role', 'viewer'] : [];
    const args = ['--cluster', nats.url, '--name', name, '--heartbeat', '500', '--ports', `267${i}0-267${i}9`, ...role];
    agents[name] = await startAgent({ home: join(root, `home-${name}`), gallery: gallery.index, args });
  }
  for (const name of ['n1', 'n2']) await agents[name]!.cli('install', 'echo');
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  pageErrors = collectErrors(page);
  await page.goto(agents.watcher!.pageUrl);
  await page.getByTestId('nav-cluster').click();
});

test.afterAll(async () => {
  await page?.close();
  for (const agent of Object.values(agents)) await agent.stop();
  await nats?.stop();
  await rm(root, { recursive: true, force: true });
});

test('the viewer has its card, but it is no node: not counted, and no column of the matrix', async () => {
  await expect(page.getByTestId('node-card-n2')).toBeVisible();
  await expect(page.locator('#cluster-title + .count')).toHaveText('2 nodes, 2 online');
  await expect(page.getByTestId('node-card-watcher').getByTestId('node-kind')).toHaveText('viewer only');
  await expect(page.getByTestId('cluster-matrix').locator('thead th')).toHaveText(['Backend', 'n1', 'n2']);
  await expect(page.getByTestId('matrix-echo').locator('td')).toHaveCount(2);
});

test('a cordoned node shows skipped, cordoned, through a rollout, never pending', async () => {
  await agents.n2!.cli('cordon');
  await expect(page.getByTestId('node-card-n2').getByTestId('cordoned')).toBeVisible();
  for (const gallery of galleries) await gallery.setVersion('echo', '1.1.0');
  const row = page.getByTestId('matrix-echo');
  await expect(row.getByText('→ 1.1.0')).toHaveCount(2);
  // Every step the n2 cell shows, as it shows it.
  await page.evaluate(() => {
    const w = window as unknown as { __n2Steps: string[] };
    w.__n2Steps = [];
    const record = () => {
      const step = document.querySelector('[data-testid="matrix-echo"] td:nth-of-type(2) [data-testid="rollout-step"]')?.textContent;
      if (step && w.__n2Steps.at(-1) !== step) w.__n2Steps.push(step);
    };
    new MutationObserver(record).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  await row.getByTestId('rollout-echo').click();
  const dialog = page.getByRole('dialog', { name: 'Upgrade echo on 1 node?' });
  await expect(dialog.getByTestId('impact').getByRole('listitem')).toHaveText(['n1: 1.0.0 → 1.1.0, no process to restart.', 'n2: cordoned, passed by.']);
  await dialog.getByRole('button', { name: 'Upgrade on all nodes' }).click();
  await expect(row.getByTestId('rollout-step')).toHaveText(['upgraded', 'skipped'], { timeout: 60_000 });
  await expect(row.locator('td').nth(1).getByTestId('rollout-reason')).toHaveText('cordoned');
  expect(await page.evaluate(() => (window as unknown as { __n2Steps: string[] }).__n2Steps)).toEqual(['skipped']);
});

test('a pin on one node is labelled with its name', async () => {
  await agents.watcher!.cli('pin', 'echo', '1.1.0', '--on', 'n2');
  await expect(page.getByTestId('matrix-echo').getByTestId('pinned')).toHaveText('1.1.0 on node n2');
  await shot(page, 'cluster-viewer');
  expect(pageErrors).toEqual([]);
});
