// One node run by one person from the UI and the CLI at once, against a real agent: counts that follow what the CLI
// did, a frozen agent told from a live one, notifications that outlive the page, and one card per backend name.
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { RunningAgent } from './fixtures/agent.ts';
import { copyStarterGallery, type TestGallery } from './fixtures/gallery.ts';
import { seenAt, shot, watchFor } from './fixtures/page.ts';
import { openSession, type Session } from './fixtures/session.ts';
import { swapOutOfBand, wallClock } from './fixtures/swap.ts';

test.describe.configure({ mode: 'serial' });

let session: Session;
let gallery: TestGallery;
let agent: RunningAgent;
let page: Page;
let pageErrors: string[];

const row = (name: string) => page.getByTestId(`backend-row-${name}`);
const upgradable = () => page.getByTestId('node-upgradable');

test.beforeAll(async ({ browser }) => {
  const args = ['--ports', '23890-23899'];
  session = await openSession(browser, 'e2e-operator', {
    args,
    prepare: async (g) => {
      // A second gallery that lists echo too, at a later version: another source, not an upgrade.
      const team = await copyStarterGallery(join(g.dir, '..', 'team'));
      await team.setVersion('echo', '2.0.0');
      args.push('--gallery', `team=${team.index}`);
    },
  });
  ({ gallery, agent, page, pageErrors } = session);
});

test.afterAll(async () => {
  await session?.close();
});

test('the sidebar counts follow what the CLI does: an upgrade clears the ↑, a rollback brings it back, a swap shows stale', async () => {
  await agent.cli('install', 'echo');
  await agent.cli('load', 'echo', 'm1');
  await page.goto(agent.pageUrl);
  await expect(row('echo')).toBeVisible();
  await expect(upgradable()).toHaveCount(0);

  await gallery.setVersion('echo', '1.1.0');
  await expect(upgradable()).toHaveText('1 ↑');
  await agent.cli('upgrade', 'echo');
  await expect(upgradable()).toHaveCount(0);
  await agent.cli('rollback', 'echo');
  await expect(row('echo').getByTestId('backend-version')).toHaveText('1.0.0');
  await expect(upgradable(), 'the rollback put an upgrade on offer again').toHaveText('1 ↑', { timeout: 3000 });

  // From the UI: the upgrade clears it too.
  await row('echo').getByTestId('action-upgrade').click();
  await page.getByRole('dialog', { name: 'Upgrade echo?' }).getByRole('button', { name: 'Upgrade', exact: true }).click();
  await expect(row('echo').getByTestId('backend-version')).toHaveText('1.1.0');
  await expect(upgradable()).toHaveCount(0);

  // A process of the user's own in the backend's directory goes stale with it; the sidebar counts Hangar's.
  const own = spawn('sleep', ['300'], { cwd: join(agent.home, 'backends', 'echo'), stdio: 'ignore' });
  try {
    await swapOutOfBand(join(agent.home, 'backends'), 'echo', '1.1.0-patched');
    await expect(page.getByTestId('node-stale')).toHaveText('1 stale');
    await expect(page.getByTestId('nav-stale')).toHaveText('1 stale');
    await page.getByTestId('nav-processes').click();
    await expect(page.getByTestId('processes-count')).toHaveText('2 running from the backends directory, 2 stale (1 not started by Hangar)');
  } finally {
    own.kill('SIGKILL');
  }
  const [m1] = await agent.ps();
  await expect(page.getByTestId(`scan-row-${m1!.pid}`)).toHaveAttribute('data-status', 'stale');
  await expect(page.getByTestId('supervised-m1')).toHaveAttribute('data-state', 'stale');
  await shot(page, 'operator-counts');
  await agent.cli('respawn', 'm1');
  await expect(page.getByTestId('node-stale')).toHaveCount(0);
  await expect(page.getByTestId('nav-stale')).toHaveCount(0);
});

test('a stopped agent turns the node amber, "not answering", within 5 s, with actions off; it is green again once it answers', async () => {
  await page.getByTestId('nav-backends').click();
  const connection = page.getByTestId('node-connection');
  await expect(connection).toHaveAttribute('data-status', 'open');
  await watchFor(page, 'unresponsive', '[data-testid="node-connection"][data-status="unresponsive"]');
  const stoppedAt = wallClock();
  process.kill(agent.pid(), 'SIGSTOP');
  try {
    await expect(page.getByTestId('node-link')).toHaveText('not answering', { timeout: 10_000 });
    const amberAfter = (await seenAt(page, 'unresponsive'))! - stoppedAt;
    console.log(`a stopped agent turned the node amber after ${amberAfter.toFixed(0)} ms`);
    expect(amberAfter).toBeLessThan(5000);
    await expect(page.getByTestId('connection-banner')).toContainText('not answering');
    const reinstall = row('echo').getByTestId('action-reinstall');
    await expect(reinstall).toHaveAttribute('aria-disabled', 'true');
    await expect(reinstall).toHaveAttribute('title', /not answering/);
    await shot(page, 'operator-not-answering');
  } finally {
    process.kill(agent.pid(), 'SIGCONT');
  }
  await expect(connection).toHaveAttribute('data-status', 'open');
  await expect(page.getByTestId('node-link')).toHaveCount(0);
  await expect(row('echo').getByTestId('action-reinstall')).toHaveAttribute('aria-disabled', 'false');
});

test('notifications are the node\'s: a reload and another viewer see them; Clear hides them in this browser', async ({ browser }) => {
  await page.getByTestId('nav-notifications').click();
  const notices = page.getByTestId('notifications');
  for (const text of ['install echo finished', 'upgrade echo finished', 'rollback echo finished']) await expect(notices).toContainText(text);
  await page.reload();
  await page.getByTestId('nav-notifications').click();
  await expect(notices).toContainText('rollback echo finished');

  const other = await browser.newPage();
  try {
    await other.goto(agent.pageUrl);
    await other.getByTestId('nav-notifications').click();
    await expect(other.getByTestId('notifications')).toContainText('rollback echo finished');
  } finally {
    await other.close();
  }

  await page.getByRole('button', { name: 'Clear' }).click();
  await expect(notices).toHaveCount(0);
  await page.reload();
  await page.getByTestId('nav-notifications').click();
  await expect(page.getByText('No notifications')).toBeVisible();
  await agent.cli('install', 'echo', '--force');
  await expect(notices).toContainText('install echo finished');
  await expect(page.getByTestId('notifications').getByRole('listitem')).toHaveCount(1);
});

test('a name two galleries list is one card, for the source the node follows; the other is listed, not offered', async () => {
  await page.getByTestId('nav-gallery').click();
  const card = page.getByTestId('gallery-entry-echo');
  await expect(card).toHaveCount(1);
  await expect(card.getByTestId('entry-gallery')).toHaveText('gallery');
  await expect(card.getByText('installed', { exact: true })).toBeVisible();
  await expect(card.getByTestId('entry-available-version')).toHaveCount(0);
  await expect(card.getByTestId('entry-source-team')).toContainText('team 2.0.0');
  await expect(card.getByTestId('entry-follows')).toContainText('installs and upgrades echo from gallery, the first gallery that lists it');
  await shot(page, 'operator-gallery-sources');
});

test('the page ran without uncaught errors', () => {
  expect(pageErrors.filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
});
