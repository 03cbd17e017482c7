// What the views read from the agent, once it cannot be reached: Processes and Cluster say the states they last read
// are unknown since the connection was lost, and read them again once the agent is back; Settings, opened meanwhile,
// says it reads them once the agent is back, not that reading them failed.
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import type { RunningAgent } from './fixtures/agent.ts';
import { openSession, type Session } from './fixtures/session.ts';

test.describe.configure({ mode: 'serial' });

let session: Session;
let agent: RunningAgent;
let page: Page;

const LOST = 'unknown since the connection to the agent was lost at \\d\\d:\\d\\d:\\d\\d';

test.beforeAll(async ({ browser }) => {
  session = await openSession(browser, 'e2e-unreachable');
  ({ agent, page } = session);
  await agent.cli('install', 'echo');
  await agent.cli('load', 'echo', 'm1');
  await page.goto(agent.pageUrl);
});

test.afterAll(async () => {
  await session?.close();
});

test('Processes says no process is ready while the agent cannot be reached, and reads them again once it is back', async () => {
  await page.getByTestId('nav-processes').click();
  const row = page.getByTestId('supervised-m1');
  await expect(row).toHaveAttribute('data-state', 'ready');
  await agent.stop();
  await expect(page.getByTestId('processes-unknown')).toHaveText(new RegExp(`^Their states, pids and use are ${LOST};`));
  await expect(row.getByTestId('process-state')).toHaveText('unknown');
  await expect(row).not.toContainText('ready');
  await agent.start();
  await expect(page.getByTestId('processes-unknown')).toHaveCount(0);
  // The agent stopped m1 as it stopped: the fresh read has it gone, not ready.
  await expect(row).toHaveCount(0);
});

test('a Backends row shows its process as unknown while the agent cannot be reached, and live again once it is back', async () => {
  await agent.cli('load', 'echo', 'm2');
  await page.getByTestId('nav-backends').click();
  const chip = page.getByTestId('process-m2');
  await expect(chip).toHaveAttribute('data-state', 'ready');
  await agent.stop();
  await expect(chip).toHaveAttribute('data-state', 'unknown');
  await expect(chip.getByTestId('process-state')).toHaveText('unknown');
  await expect(chip).toHaveAttribute('title', new RegExp(`^Its state, pid and port are ${LOST}$`));
  await agent.start();
  // The agent stopped m2 as it stopped: the fresh read has it gone, not ready.
  await expect(chip).toHaveCount(0);
});

test('Cluster counts no node online while the agent cannot be reached, and again once it is back', async () => {
  await page.getByTestId('nav-cluster').click();
  const count = page.locator('.view-header .count');
  const card = page.getByTestId('node-card-This machine');
  await expect(count).toHaveText('1 node, 1 online');
  await expect(card.getByTestId('node-card-dot')).toHaveAttribute('aria-label', 'online');
  await agent.stop();
  await expect(count).toHaveText(new RegExp(`^1 node, their states ${LOST}$`));
  await expect(card.getByTestId('node-card-dot')).toHaveAttribute('aria-label', 'unknown');
  for (const action of ['cordon', 'drain']) await expect(card.getByTestId(action)).toHaveAttribute('title', /cannot be reached/);
  await expect(card.getByTestId('node-resources')).toHaveAttribute('title', new RegExp(`^Use ${LOST}$`));
  await agent.start();
  await expect(count).toHaveText('1 node, 1 online');
  await expect(card.getByTestId('node-card-dot')).toHaveAttribute('aria-label', 'online');
  await expect(card.getByTestId('drain')).toHaveAttribute('aria-disabled', 'false');
  await expect(card.getByTestId('node-resources')).not.toHaveAttribute('title', /.*/);
});

test('Settings opened while the agent cannot be reached says they are read once it is back, then reads them', async () => {
  await page.getByTestId('nav-backends').click();
  await agent.stop();
  await page.getByTestId('nav-settings').click();
  await expect(page.getByTestId('settings-unread')).toHaveText('The settings are read once the agent can be reached.');
  await expect(page.getByText('Could not read the settings')).toHaveCount(0);
  await agent.start();
  await expect(page.getByTestId('settings-unread')).toHaveCount(0);
  await expect(page.getByTestId('setting-auto-upgrade')).toBeVisible();
  await expect(page.getByText('Could not read the settings')).toHaveCount(0);
});
