// A crashed backend in the UI against a real agent: kill -9 keeps its row, red and counted in the sidebar, with how
// it ended; Restart brings it back with its model loaded; the Logs drawer shows its log across both processes.
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import type { RunningAgent } from './fixtures/agent.ts';
import { docShot, shot } from './fixtures/page.ts';
import { openSession, type Session } from './fixtures/session.ts';

test.describe.configure({ mode: 'serial' });

let session: Session;
let agent: RunningAgent;
let page: Page;
let pageErrors: string[];

test.beforeAll(async ({ browser }) => {
  session = await openSession(browser, 'e2e-lifecycle');
  ({ agent, page, pageErrors } = session);
});

test.afterAll(async () => {
  await session?.close();
});

test('a kill -9 leaves a red crashed row in Processes and a crashed count in the sidebar; Restart brings it back', async () => {
  await agent.cli('install', 'echo');
  await agent.cli('load', 'echo', 'chat-model');
  const loaded = JSON.parse(await agent.cli('load', 'echo', 'embeddings', '--restart', 'never', '--json')) as { pid: number; port: number };
  await page.goto(agent.pageUrl);
  await page.getByTestId('nav-processes').click();
  const row = page.getByTestId('supervised-embeddings');
  await expect(row).toHaveAttribute('data-state', 'ready');

  process.kill(loaded.pid, 'SIGKILL');
  await expect(row).toHaveAttribute('data-state', 'crashed');
  await expect(row.getByTestId('process-state')).toHaveText('crashed');
  await expect(row.getByTestId('supervised-note')).toContainText('killed by SIGKILL');
  await expect(page.getByTestId('nav-crashed')).toHaveText('1 crashed');
  await expect(page.getByTestId('supervised-chat-model')).toHaveAttribute('data-state', 'ready');
  await expect(page.getByTestId('supervised-chat-model').getByTestId('supervised-restarts')).toHaveText('0');
  const [r, g, b] = (await page.getByTestId('nav-crashed').evaluate((el) => getComputedStyle(el).backgroundColor)).match(/\d+/g)!.map(Number);
  expect(r! > 180 && g! < 100 && b! < 100, `the count is red, not rgb(${r}, ${g}, ${b})`).toBe(true);
  await page.mouse.move(0, 0);
  await docShot(page, 'screenshot-processes');
  await page.emulateMedia({ colorScheme: 'dark' });
  await shot(page, '10-processes-crashed-dark');
  await page.emulateMedia({ colorScheme: 'light' });

  await row.getByTestId('process-restart').click();
  await expect(row).toHaveAttribute('data-state', 'ready');
  await expect(row.getByTestId('supervised-restarts')).toHaveText('1');
  await expect(page.getByTestId('nav-crashed')).toHaveCount(0);
  const after = (await agent.ps()).find((p) => p.model === 'embeddings');
  expect(after!.pid).not.toBe(loaded.pid);
  expect([after!.port, after!.loaded]).toEqual([loaded.port, true]);

  await row.getByTestId('process-logs').click();
  const drawer = page.getByTestId('log-body');
  await expect(drawer).toContainText(`----- pid ${loaded.pid} was killed by SIGKILL -----`);
  await expect(drawer).toContainText(`----- restart: pid ${after!.pid}, backend echo, port ${after!.port} -----`);
  await page.getByRole('button', { name: 'Close logs' }).click();

  await row.getByTestId('process-stop').click();
  await page.getByRole('dialog').getByRole('button', { name: 'Stop' }).click();
  await expect(row).toHaveCount(0);
});

test('Unload frees the model: its row says idle, not ready, as `hangar ps` does, until the next load', async () => {
  const row = page.getByTestId('supervised-chat-model');
  await expect(row).toHaveAttribute('data-state', 'ready');
  await row.getByTestId('process-unload').click();
  await expect(row).toHaveAttribute('data-state', 'idle');
  await expect(row.getByTestId('process-state')).toHaveText('idle');
  expect(await agent.cli('ps')).toMatch(/^chat-model\s+echo\s+\d+\s+\d+\s+idle\s/m);

  await agent.cli('load', 'echo', 'chat-model');
  await expect(row).toHaveAttribute('data-state', 'ready');
  expect(await agent.cli('ps')).toMatch(/^chat-model\s+echo\s+\d+\s+\d+\s+ready\s/m);
});

test('the page ran without uncaught errors', async () => {
  expect(pageErrors.filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
});
