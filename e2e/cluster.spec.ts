// The cluster in the UI: three real agents on a real nats-server, the page served by the first. Every node in the
// sidebar, a rolling upgrade driven from the Cluster view with each node's step, another node's views, and a node
// that shut down shown offline with its actions off.
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trustingHomes } from '../electron/cluster/test-cluster.ts';
import { startNats, type NatsServer } from '../electron/cluster/test-nats.ts';
import { startAgent, type RunningAgent } from './fixtures/agent.ts';
import { copyStarterGallery, type TestGallery } from './fixtures/gallery.ts';
import { collectErrors, docShot, seenAt, shot, watchFor } from './fixtures/page.ts';
import { swapOutOfBand } from './fixtures/swap.ts';

test.describe.configure({ mode: 'serial' });

let root: string;
let nats: NatsServer;
const agents: RunningAgent[] = [];
const galleries: TestGallery[] = [];
let page: Page;
let pageErrors: string[];

test.beforeAll(async ({ browser }) => {
  root = await mkdtemp(join(tmpdir(), 'hangar-e2e-cluster-'));
  nats = await startNats();
  await trustingHomes([1, 2, 3].map((i) => join(root, `home-${i}`)));
  for (const i of [1, 2, 3]) {
    const gallery = await copyStarterGallery(join(root, `gallery-${i}`));
    galleries.push(gallery);
    const args = ['--cluster', nats.url, '--name', `n${i}`, '--heartbeat', '500', '--ports', `237${i}0-237${i}9`];
    agents.push(await startAgent({ home: join(root, `home-${i}`), gallery: gallery.index, args }));
  }
  for (const agent of agents) await agent.cli('install', 'echo');
  await agents[1]!.cli('load', 'echo', 'm1');
  page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
  pageErrors = collectErrors(page);
  await page.goto(agents[0]!.pageUrl);
});

test.afterAll(async () => {
  await page?.close();
  for (const agent of agents) await agent.stop();
  await nats?.stop();
  await rm(root, { recursive: true, force: true });
});

test('every node is in the sidebar with a status dot', async () => {
  for (const name of ['n1', 'n2', 'n3']) {
    await expect(page.getByTestId(`node-${name}`).getByLabel('online')).toBeVisible();
  }
  await expect(page.getByTestId('node-n2')).toContainText('linux/');
});

test('Upgrade on all nodes asks first, naming every node with its version change and restarts, and the halt rule', async () => {
  for (const gallery of galleries) await gallery.setVersion('echo', '1.1.0');
  await page.getByTestId('nav-cluster').click();
  const row = page.getByTestId('matrix-echo');
  await expect(row.getByText('→ 1.1.0')).toHaveCount(3);
  await expect(page.getByTestId('node-n1')).toContainText('1 ↑');
  await row.getByTestId('rollout-echo').click();
  const dialog = page.getByRole('dialog', { name: 'Upgrade echo on 3 nodes?' });
  await expect(dialog.getByTestId('impact').getByRole('listitem')).toHaveText([
    'n1: 1.0.0 → 1.1.0, no process to restart.',
    'n2: 1.0.0 → 1.1.0, restarts m1.',
    'n3: 1.0.0 → 1.1.0, no process to restart.',
  ]);
  await expect(dialog.getByTestId('impact-rule')).toContainText('It stops at the first node that fails');
  await docShot(page, 'screenshot-cluster-confirm');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await expect(dialog).toHaveCount(0);
  await page.waitForTimeout(500);
  expect(JSON.parse(await agents[0]!.cli('rollouts', '--json')), 'Cancel started nothing').toEqual([]);
});

test('Upgrade on all nodes runs a rolling upgrade and shows each node\'s step', async () => {
  const row = page.getByTestId('matrix-echo');
  await row.getByTestId('rollout-echo').click();
  await page.getByRole('dialog', { name: 'Upgrade echo on 3 nodes?' }).getByRole('button', { name: 'Upgrade on all nodes' }).click();
  await expect(row.getByTestId('rollout-step')).toHaveText(['upgraded', 'upgraded', 'upgraded'], { timeout: 60_000 });
  await expect(row).not.toContainText('→ 1.1.0');
  await expect(row.locator('td .mono')).toHaveText(['1.1.0', '1.1.0', '1.1.0']);
  await shot(page, 'cluster-rollout');
  expect(await agents[1]!.ps()).toEqual([expect.objectContaining({ model: 'm1', cwd: 'ok' })]);
});

test('Roll back this rollout asks first; one started from the CLI shows as Rolling back, moves the counts, and its end reaches Notifications', async () => {
  const row = page.getByTestId('matrix-echo');
  await row.getByTestId('rollback-echo').click();
  const dialog = page.getByRole('dialog', { name: 'Roll back the rollout of echo on 3 nodes?' });
  await expect(dialog.getByTestId('impact').getByRole('listitem')).toHaveText([
    'n1: 1.1.0 → 1.0.0, no process to restart.',
    'n2: 1.1.0 → 1.0.0, restarts m1.',
    'n3: 1.1.0 → 1.0.0, no process to restart.',
  ]);
  await expect(dialog.getByTestId('impact-rule')).toContainText('the others still roll back');
  await dialog.getByRole('button', { name: 'Cancel' }).click();

  const [rollout] = JSON.parse(await agents[0]!.cli('rollouts', '--json')) as { id: string }[];
  // The button names what runs: seen however short the rollback is.
  await watchFor(page, 'rolling-back', '[data-testid="rollout-echo"][title="Rolling back…"]');
  await agents[0]!.cli('rollback', '--rollout', rollout!.id);
  expect(await seenAt(page, 'rolling-back'), 'the button said Rolling back… while it ran').not.toBeNull();
  await expect(row.getByTestId('rollout-step')).toHaveText(['rolled-back', 'rolled-back', 'rolled-back']);
  await expect(row.getByTestId('rollout-echo')).toHaveText('Upgrade on all nodes');
  for (const name of ['n1', 'n2', 'n3']) await expect(page.getByTestId(`node-${name}`)).toContainText('1 ↑');
  await page.getByTestId('nav-notifications').click();
  await expect(page.getByTestId('notifications')).toContainText('Rollout of echo rolled back: rolled back n1, n2, n3');
  await expect(page.getByTestId('notifications')).toContainText('n2: rollback echo finished');

  // Forward again for the tests that follow.
  await page.getByTestId('nav-cluster').click();
  await agents[0]!.cli('upgrade', 'echo', '--on', 'all');
  await expect(row.getByTestId('rollout-step')).toHaveText(['upgraded', 'upgraded', 'upgraded']);
});

test("an out-of-band swap on n2 shows n2's stale process in the sidebar and the matrix, in red", async () => {
  await watchFor(page, 'remote-stale', '[data-testid="node-n2"] .nav-count.danger');
  const swappedAt = await swapOutOfBand(join(agents[1]!.home, 'backends'), 'echo', '1.1.0-swapped');
  await expect(page.getByTestId('node-n2')).toContainText('1 stale');
  await expect(page.getByTestId('matrix-echo')).toContainText('1 stale cwd');
  const seen = await seenAt(page, 'remote-stale');
  console.log(`remote stale count latency: ${(seen! - swappedAt).toFixed(1)} ms after the out-of-band rename on another node`);
  await shot(page, 'cluster-stale');
  await agents[1]!.cli('respawn', 'm1');
  await expect(page.getByTestId('node-n2')).not.toContainText('stale');
});

test("selecting another node shows that node's views", async () => {
  await page.getByTestId('node-n2').click();
  await page.getByTestId('nav-backends').click();
  await expect(page.getByText('m1')).toBeVisible();
  await page.getByTestId('node-n1').click();
  await expect(page.getByText('m1')).toHaveCount(0);
});

test("Settings name the cluster this host is in, and only for the host's own node", async () => {
  await page.getByTestId('node-n1').click();
  await page.getByTestId('nav-settings').click();
  await expect(page.getByTestId('cluster-state')).toHaveText(`This agent is in the cluster at ${nats.url} as n1.`);
  await expect(page.getByTestId('cluster-url')).toHaveText(nats.url);
  await expect(page.getByRole('region', { name: 'Cluster', exact: true }).getByRole('button')).toHaveCount(0);
  await page.getByTestId('node-n2').click();
  await expect(page.getByRole('region', { name: 'Galleries' })).toBeVisible();
  await expect(page.getByTestId('cluster-state')).toHaveCount(0);
  await page.getByTestId('node-n1').click();
  await page.getByTestId('nav-backends').click();
});

test('a node that shut down is greyed out, its actions off with the reason', async () => {
  const n3 = page.getByTestId('node-n3');
  await n3.click();
  await page.getByTestId('nav-backends').click();
  const rollback = page.getByRole('button', { name: 'Rollback' });
  await expect(rollback).toBeEnabled();
  await agents[2]!.stop();
  await expect(n3.getByLabel('offline')).toBeVisible();
  await expect(n3).toContainText('offline: it shut down');
  await expect(page.getByTestId('node-offline')).toContainText('n3 is offline (it shut down)');
  await expect(page.locator('fieldset.node-views')).toHaveAttribute('disabled', '');
  await expect(rollback).toBeDisabled();
  await shot(page, 'cluster-offline');
  await page.getByTestId('node-n1').click();
  await n3.click();
  await expect(page.getByTestId('node-offline')).toBeVisible();
  await expect(page.getByRole('alert')).toHaveCount(0);
  expect(pageErrors).toEqual([]);
});
