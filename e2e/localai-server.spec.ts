// A LocalAI server beside the node, in the UI: a real agent and the stand-in LocalAI (written from LocalAI's code) on
// the same backends directory. Linked from Settings → LocalAI server; its model listed under Processes as run by
// LocalAI; a swap of its backend's directory by an installer (what LocalAI's own upgrade does) shows the red stale cwd
// badge, and Respawn brings the model back on the live tree through LocalAI's API.
import { expect, test } from '@playwright/test';
import type { Locator, Page } from '@playwright/test';
import { join } from 'node:path';
import { StandInServer } from '../electron/localai/testing/standin-server.ts';
import type { RunningAgent } from './fixtures/agent.ts';
import { docShot, seriousViolations } from './fixtures/page.ts';
import { openSession, type Session } from './fixtures/session.ts';
import { swapOutOfBand } from './fixtures/swap.ts';

test.describe.configure({ mode: 'serial' });

let session: Session;
let agent: RunningAgent;
let page: Page;
let localai: StandInServer;

test.beforeAll(async ({ browser }) => {
  session = await openSession(browser, 'e2e-localai-server', { args: ['--ports', '23920-23929', '--localai-poll', '300'] });
  ({ agent, page } = session);
  await agent.cli('install', 'echo');
  // Left stale on purpose: the badge is what this spec looks at.
  await agent.cli('settings', 'localai-respawn', 'off');
  localai = new StandInServer({ backendsDir: join(agent.home, 'backends'), models: { m1: 'echo' }, healthAttempts: 200, healthIntervalMs: 20, version: 'v3.9.0' });
  await localai.start();
  const loaded = await fetch(`${localai.url}/backend/load`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm1' }) });
  expect(loaded.status).toBe(200);
});

test.afterAll(async () => {
  await session?.close();
  await localai?.stop();
});

test('Settings → LocalAI server links it, and says what it runs', async () => {
  await page.goto(agent.pageUrl);
  await page.getByTestId('nav-settings').click();
  const section = page.getByTestId('localai-server-settings');
  await expect(section.getByTestId('localai-server-state')).toHaveText('No LocalAI server is linked.');
  await section.getByTestId('localai-server-url').fill(localai.url);
  await section.getByTestId('localai-server-save').click();
  const state = section.getByTestId('localai-server-state');
  await expect(state).toHaveText(`Linked to LocalAI v3.9.0 (82c191afadf5) at ${localai.url}: 1 model loaded.`);
  // LocalAI's commit short, as git shows one; whole on hover, and in what is copied.
  await expect(state.getByTestId('localai-server-commit')).toHaveAttribute('title', 'commit 82c191afadf5f005281e798ccfa0ffd0d5805030');
  expect(await copied(state)).toBe(`Linked to LocalAI v3.9.0 (82c191afadf5f005281e798ccfa0ffd0d5805030) at ${localai.url}: 1 model loaded.`);
  expect(await copied(state.getByTestId('localai-server-commit'))).toBe('82c191afadf5f005281e798ccfa0ffd0d5805030');
  expect(await seriousViolations(page)).toEqual([]);
});

/** What Ctrl+C puts on the clipboard once `element`'s text is selected. */
async function copied(element: Locator): Promise<string | null> {
  await element.evaluate((node) => {
    const range = document.createRange();
    range.selectNodeContents(node);
    document.getSelection()!.removeAllRanges();
    document.getSelection()!.addRange(range);
    const w = window as unknown as { copied: string | null };
    w.copied = null;
    window.addEventListener('copy', (e) => (w.copied = e.clipboardData!.getData('text/plain')), { once: true });
  });
  await page.keyboard.press('ControlOrMeta+C');
  return page.evaluate(() => (window as unknown as { copied: string | null }).copied);
}

test("its model is listed under Processes as run by LocalAI; an installer's swap turns it red, and Respawn brings it back on the live tree", async () => {
  await page.getByTestId('nav-processes').click();
  const row = page.getByTestId('localai-table').getByTestId('supervised-m1');
  await expect(row).toBeVisible();
  await expect(row).toHaveAttribute('data-state', 'ready');
  const before = localai.pids().get('m1');
  await expect(row).toContainText(String(before));

  await swapOutOfBand(join(agent.home, 'backends'), 'echo', '1.0.0-swapped');
  await expect(row.getByTestId('stale-badge')).toHaveText('stale cwd');
  await expect(row).toHaveAttribute('data-state', 'stale');
  await page.getByTestId('processes-scan').click();
  const scanned = page.getByTestId(`scan-row-${before}`);
  await expect(scanned.getByTestId('scan-supervised')).toHaveText('run by LocalAI');
  await expect(scanned.getByTestId('stale-badge')).toHaveText('stale cwd');
  await docShot(page, 'screenshot-localai-server');
  await row.getByTestId('stale-badge').hover();
  await expect(row.getByTestId('stale-tooltip')).toContainText("LocalAI's process for m1");
  expect(await seriousViolations(page)).toEqual([]);

  await row.getByTestId('process-respawn').click();
  await expect(row).toHaveAttribute('data-state', 'ready');
  await expect(row.getByTestId('stale-badge')).toHaveCount(0);
  await expect(row.getByTestId('supervised-note')).toContainText('respawned through LocalAI (shutdown, then load)');
  expect(localai.pids().get('m1')).not.toBe(before);
});

test("Unload asks LocalAI to stop the model and its row goes, as `hangar ps` drops it: no Restart the CLI would refuse", async () => {
  const row = page.getByTestId('localai-table').getByTestId('supervised-m1');
  await expect(row).toHaveAttribute('data-state', 'ready');
  await row.getByTestId('process-unload').click();
  await expect(row).toHaveCount(0);
  await expect(page.getByTestId('process-restart')).toHaveCount(0);
  expect((await agent.ps()).some((p) => p.model === 'm1')).toBe(false);
  const loaded = await fetch(`${localai.url}/backend/load`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm1' }) });
  expect(loaded.status).toBe(200);
  await expect(row).toHaveAttribute('data-state', 'ready');
});

test('LocalAI stopped: its row is not ready, and says since when LocalAI is not running', async () => {
  const row = page.getByTestId('localai-table').getByTestId('supervised-m1');
  await localai.stop();
  await expect(row).not.toHaveAttribute('data-state', 'ready');
  await expect(row.getByTestId('supervised-note')).toContainText(/LocalAI is not running \(since \d\d:\d\d:\d\d UTC\)/);
  expect(await seriousViolations(page)).toEqual([]);
});
