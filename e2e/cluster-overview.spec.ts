// The Cluster view as an overview, against three real agents and a viewer-only coordinator on a real nats-server with
// JetStream: a card per node with its labels and its machine as bars (fake nvidia-smi and rocm-smi on two nodes'
// PATH, none on the third), the GPU memory of a process in the Processes view, a pin made from the matrix and a
// node whose galleries cannot follow it shown drifted, and a rollout whose coordinator died resumed from the page.
import AxeBuilder from '@axe-core/playwright';
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RolloutView } from '../shared/types.ts';
import { connect } from '../electron/agent/connect.ts';
import { trustingHomes } from '../electron/cluster/test-cluster.ts';
import { startNats, type NatsServer } from '../electron/cluster/test-nats.ts';
import { fakeGpuTools } from '../electron/core/testing/fake-gpu-tools.ts';
import { startAgent, type RunningAgent } from './fixtures/agent.ts';
import { copyStarterGallery, type TestGallery } from './fixtures/gallery.ts';
import { collectErrors, docShot, shot } from './fixtures/page.ts';

test.describe.configure({ mode: 'serial' });

let root: string;
let nats: NatsServer;
const agents: Record<string, RunningAgent> = {};
const galleries: Record<string, TestGallery> = {};
let page: Page;
let pageErrors: string[];

test.beforeAll(async ({ browser }) => {
  root = await mkdtemp(join(tmpdir(), 'hangar-e2e-overview-'));
  nats = await startNats();
  const tools = await fakeGpuTools(root);
  const names = ['n1', 'n2', 'n3', 'coordinator'];
  await trustingHomes(names.map((n) => join(root, `home-${n}`)));
  const setups: Record<string, { labels: string[]; path?: string }> = {
    n1: { labels: ['gpu=nvidia', 'zone=a'], path: tools.nvidia },
    n2: { labels: ['gpu=amd', 'zone=a'], path: tools.amd },
    n3: { labels: [] },
  };
  for (const [i, name] of names.entries()) {
    galleries[name] = await copyStarterGallery(join(root, `gallery-${name}`));
    const setup = setups[name];
    const args = ['--cluster', nats.url, '--name', name, '--heartbeat', '500', '--ports', `264${i}0-264${i}9`, ...(setup ? setup.labels.flatMap((l) => ['--label', l]) : ['--cluster-role', 'viewer'])];
    const env = { HANGAR_FORCE_CAPABILITY: 'default', FAKE_GPU_APPS: join(root, 'apps.csv'), ...(setup?.path && { PATH: `${setup.path}:${process.env.PATH}` }) };
    agents[name] = await startAgent({ home: join(root, `home-${name}`), gallery: galleries[name]!.index, args, env });
  }
  for (const name of ['n1', 'n2', 'n3']) await agents[name]!.cli('install', 'echo');
  const { pid } = JSON.parse(await agents.n1!.cli('load', 'echo', 'm1', '--json')) as { pid: number };
  await writeFile(join(root, 'apps.csv'), `${pid}, 2048\n`);
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  pageErrors = collectErrors(page);
  await page.goto(agents.n1!.pageUrl);
  await page.getByTestId('nav-cluster').click();
});

test.afterAll(async () => {
  await page?.close();
  for (const agent of Object.values(agents)) await agent.stop();
  await nats?.stop();
  await rm(root, { recursive: true, force: true });
});

test('a card per node: status, labels, counts, and its machine as bars; a node with no GPU tool says so', async () => {
  const n1 = page.getByTestId('node-card-n1');
  await expect(n1.getByRole('list', { name: 'Labels' })).toHaveText(['gpu=nvidia', 'zone=a'].join(''));
  await expect(n1.getByTestId('node-counts')).toHaveText('backend1process1stale0drift0');
  await expect(n1.getByTestId('node-card-status')).toHaveText(/^this host · linux\//);
  await expect(n1.getByRole('meter', { name: 'VRAM: NVIDIA GeForce RTX 4090: 1.0 GiB of 24 GiB, 7% busy' })).toBeVisible();
  await expect(n1.getByTestId('gpu')).toHaveText('NVIDIA GeForce RTX 4090VRAM1.0/24 GiB · 7%');
  await expect(n1.getByRole('meter', { name: /^RAM: .* free of / })).toBeVisible();
  await expect(n1.getByRole('meter', { name: /^Disk: .* free of / })).toBeVisible();
  await expect(page.getByTestId('node-card-n2').getByRole('meter', { name: 'VRAM: Radeon RX 7900 XTX: 2.0 GiB of 24 GiB, 35% busy' })).toBeVisible();
  await expect(page.getByTestId('node-card-n3').getByTestId('gpu-none')).toHaveText('no GPU tool found');
  await expect(page.getByTestId('node-card-n3')).not.toContainText('0 B of');
  await expect(page.getByTestId('node-card-coordinator')).toHaveCount(0);
});

test("labels set in a node's Settings show on its card; those its start fixed say so", async () => {
  await page.getByTestId('node-n3').click();
  await page.getByTestId('nav-settings').click();
  await page.getByTestId('setting-labels').fill('zone=b');
  await page.getByTestId('setting-labels-apply').click();
  await page.getByTestId('nav-cluster').click();
  await expect(page.getByTestId('node-card-n3').getByRole('list', { name: 'Labels' })).toHaveText('zone=b');
  await page.getByTestId('node-n1').click();
  await page.getByTestId('nav-settings').click();
  await expect(page.getByTestId('setting-labels')).toBeDisabled();
  await expect(page.getByTestId('setting-labels')).toHaveValue('gpu=nvidia, zone=a');
  await expect(page.getByRole('region', { name: 'Labels' })).toContainText('Set when this node was started (--label)');
  await page.getByTestId('nav-cluster').click();
});

test('the Processes view shows the GPU memory each backend process holds', async () => {
  await page.getByTestId('node-n1').click();
  await page.getByTestId('nav-processes').click();
  await expect(page.getByTestId('supervised-m1').getByTestId('supervised-vram')).toHaveText('2.0 GiB');
  await expect(page.locator('.node-facts'), "the sidebar says which build and directory the node's view is about").toBeVisible();
  await page.getByTestId('nav-cluster').click();
  await expect(page.locator('.node-facts'), "the cluster view is about every node: no one node's facts beside it").toHaveCount(0);
});

test('a pin from the matrix: the nodes that can follow it do, and one whose galleries cannot is shown drifted', async () => {
  for (const name of ['n1', 'n2']) await galleries[name]!.setVersion('echo', '1.0.1');
  const row = page.getByTestId('matrix-echo');
  await expect(row.getByTestId('rollout-echo'), 'the new version offered').toBeVisible();
  await row.getByTestId('pin-echo').click();
  const form = row.getByTestId('pin-form-echo');
  await form.getByTestId('pin-version').fill('1.0.1');
  await expect(form.getByTestId('pin-on')).toHaveValue('all');
  await form.getByTestId('pin-submit').click();
  const confirm = page.getByRole('dialog', { name: 'Pin echo 1.0.1 on 3 nodes?' });
  await expect(confirm.getByTestId('impact')).toContainText('n1: 1.0.0 → 1.0.1, restarts m1.');
  await expect(confirm.getByTestId('impact')).toContainText('n3: 1.0.0 → 1.0.1, no process to restart.');
  await expect(confirm.getByTestId('impact-rule')).toContainText('one whose galleries do not offer the version says so');
  await confirm.getByRole('button', { name: 'Pin' }).click();
  await expect(row.getByTestId('pinned')).toHaveText('1.0.1 on every node');
  await expect(row.locator('td .mono')).toHaveText(['1.0.1', '1.0.1', '1.0.0'], { timeout: 30_000 });
  const drift = row.getByTestId('drift');
  await expect(drift).toHaveText("1.0.1 wanted: 1.0.1 wanted, not offered by this node's galleries");
  await expect(drift).toHaveAttribute('title', "1.0.1 wanted, not offered by this node's galleries");
  await expect(page.getByTestId('node-card-n3').getByTestId('node-counts')).toContainText('drift1');
});

test('a rollout whose coordinator died is shown interrupted, and Resume finishes it from this page', async () => {
  for (const name of ['n1', 'n2']) await galleries[name]!.setVersion('echo', '1.1.0');
  const row = page.getByTestId('matrix-echo');
  await expect(row).toContainText('→ 1.1.0');
  const watcher = await connect({ node: agents.n1!.url, token: agents.n1!.token, home: agents.n1!.home });
  try {
    const killed = new Promise<void>((resolve) => {
      watcher.onEvent((e) => {
        if (e.type === 'rollout' && e.rollout.state === 'running' && e.rollout.nodes[0]?.step === 'upgraded') {
          void agents.coordinator!.kill();
          resolve();
        }
      });
    });
    const run = agents.coordinator!.cli('upgrade', 'echo', '--on', 'all').catch(() => 'stopped');
    await killed;
    await run;
  } finally {
    watcher.close();
  }
  const interrupted = page.getByTestId('interrupted-echo');
  await expect(interrupted).toContainText('Rollout of echo to 1.1.0 on every node interrupted');
  await expect(interrupted).toContainText('its coordinator coordinator');
  await expect(interrupted).toContainText('1 node upgraded, 2 to go.');
  expect(await seriousViolations(), 'the Cluster view with an interrupted rollout').toEqual([]);
  await shot(page, 'cluster-interrupted');
  await interrupted.getByTestId('resume').click();
  const confirm = page.getByRole('dialog', { name: 'Resume the rollout of echo on 2 nodes?' });
  await expect(confirm.getByTestId('impact')).toContainText(/n3: 1\.0\.0 → 1\.1\.0, no process to restart\./);
  await confirm.getByRole('button', { name: 'Resume' }).click();
  await expect(interrupted).toHaveCount(0);
  await expect(row.getByTestId('rollout-step')).toHaveText(['upgraded', 'upgraded', 'skipped'], { timeout: 60_000 });
  await expect(row.getByTestId('rollout-reason')).toHaveText(["1.1.0 wanted, not offered by this node's galleries"]);
  await expect(row.locator('td .mono')).toHaveText(['1.1.0', '1.1.0', '1.0.0']);
  await expect(row.getByTestId('drift')).toHaveText("1.1.0 wanted: 1.1.0 wanted, not offered by this node's galleries");
  const rollouts = JSON.parse(await agents.n2!.cli('rollouts', '--json')) as RolloutView[];
  expect(rollouts[0]!.coordinator.name).toBe('n1');
  await page.mouse.move(0, 0);
  await docShot(page, 'screenshot-cluster');
  expect(pageErrors).toEqual([]);
});

test('twenty nodes fit: at 1280 × 800 the cards go four across, compact, with nothing cut off', async () => {
  const card = page.getByTestId('node-card-n1');
  const box = (await card.boundingBox())!;
  expect(box.width).toBeGreaterThanOrEqual(200);
  // Four across: twenty nodes take five rows of cards, three of them on one screen.
  const grid = (await page.getByTestId('node-grid').boundingBox())!;
  expect(Math.floor(grid.width / box.width)).toBeGreaterThanOrEqual(4);
  expect(box.height).toBeLessThanOrEqual(250);
  const overflowing = await card.evaluate((el) => [...el.querySelectorAll('*')].filter((c) => c.scrollWidth > el.clientWidth + 1).length);
  expect(overflowing).toBe(0);
});

/** Violations axe rates serious or critical, as "rule: target" lines. */
async function seriousViolations(): Promise<string[]> {
  const { violations } = await new AxeBuilder({ page }).analyze();
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}`));
}

test('nats-server stopped: one banner, this node usable, the others unknown with their actions off; restarted, all is back', async () => {
  const port = Number(new URL(nats.url).port);
  await page.getByTestId('node-n2').click();
  await page.getByTestId('nav-backends').click();
  await expect(page.getByRole('button', { name: 'Rollback' })).toBeEnabled();
  await nats.stop({ keepStore: true });
  await expect(page.getByTestId('node-offline')).toHaveText('n2 is unknown (no broker): its actions are off until it is back.');
  await expect(page.locator('fieldset.node-views')).toHaveAttribute('disabled', '');
  await page.getByTestId('nav-cluster').click();
  const banner = page.getByTestId('cluster-banner');
  await expect(banner).toHaveCount(1);
  await expect(banner).toContainText(`cluster connection lost: the NATS server at 127.0.0.1:${port} cannot be reached, retrying`);
  await expect(page.getByTestId('node-card-n2').getByTestId('node-card-status')).toHaveText('unknown (no broker)');
  await expect(page.getByTestId('node-card-n2').getByTestId('drain')).toBeDisabled();
  await expect(page.getByTestId('node-n2')).toContainText('unknown (no broker)');
  await expect(page.getByTestId('node-n2').getByLabel('unknown')).toBeVisible();
  await expect(page.getByTestId('node-card-n1').getByTestId('node-card-status')).toHaveText(/^this host/);
  await page.getByTestId('node-n1').click();
  await page.getByTestId('nav-backends').click();
  await expect(page.getByRole('button', { name: 'Rollback' })).toBeEnabled();
  await shot(page, 'cluster-no-broker');

  nats = await startNats([], port, nats.storeDir!);
  await expect(banner).toHaveCount(0, { timeout: 20_000 });
  await expect(page.getByTestId('node-n2').getByLabel('online')).toBeVisible();
  await page.getByTestId('nav-cluster').click();
  await expect(page.getByTestId('matrix-echo').getByTestId('pinned')).toHaveCount(0);
  await expect(page.getByTestId('matrix-echo').getByTestId('drift')).toHaveText(/^1\.1\.0 wanted/);
  expect(pageErrors).toEqual([]);
});

test("Cordon and Drain from a node's card: drain lists its processes first, then leaves none; both undone by Uncordon", async () => {
  const n1 = page.getByTestId('node-card-n1');
  await n1.getByTestId('drain').click();
  const dialog = page.getByRole('dialog', { name: 'Drain n1?' });
  await expect(dialog.getByTestId('drain-list')).toHaveText(/^Stop m1 \(echo, pid \d+\): its model is freed first$/);
  await dialog.getByRole('button', { name: 'Stop 1 process' }).click();
  await expect(n1.getByTestId('cordoned')).toHaveText('cordoned');
  await expect(n1.getByTestId('node-counts')).toContainText('processes0');
  expect(JSON.parse(await agents.n1!.cli('ps', '--json'))).toEqual([]);
  await n1.getByTestId('cordon').click();
  await expect(n1.getByTestId('cordoned')).toHaveCount(0);
  await page.getByTestId('node-card-n2').getByTestId('cordon').click();
  await expect(page.getByTestId('node-card-n2').getByTestId('cordoned')).toBeVisible();
  await page.getByTestId('node-card-n2').getByRole('button', { name: 'Uncordon' }).click();
  await expect(page.getByTestId('node-card-n2').getByTestId('cordoned')).toHaveCount(0);
});
