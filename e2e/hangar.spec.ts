// The browser UI against a real headless agent over WebSocket, walking the product's central story: install, load,
// an out-of-band swap that leaves a process with a stale cwd, respawn, upgrade, a bad checksum, and rollback.
import { expect, test } from '@playwright/test';
import type { Locator, Page } from '@playwright/test';
import { join } from 'node:path';
import type { RunningAgent } from './fixtures/agent.ts';
import type { TestGallery } from './fixtures/gallery.ts';
import { docShot, seenAt, shot, watchFor } from './fixtures/page.ts';
import { openSession, type Session } from './fixtures/session.ts';
import { swapOutOfBand } from './fixtures/swap.ts';

test.describe.configure({ mode: 'serial' });

let session: Session;
let gallery: TestGallery;
let agent: RunningAgent;
let page: Page;
let pageErrors: string[];

const row = (name: string): Locator => page.getByTestId(`backend-row-${name}`);
const chip = (model: string): Locator => page.getByTestId(`process-${model}`);
const pidOf = async (model: string) => Number(await chip(model).getByTestId('process-pid').textContent());

async function loadFromUi(backend: string, model: string): Promise<Locator> {
  await row(backend).getByTestId('load-model-input').fill(model);
  await row(backend).getByRole('button', { name: 'Load', exact: true }).click();
  const result = row(backend).getByTestId('load-result');
  await expect(result).toBeVisible();
  return result;
}

async function confirm(title: string, button: string) {
  const dialog = page.getByRole('dialog', { name: title });
  await expect(dialog.getByTestId('impact')).toBeVisible();
  await dialog.getByRole('button', { name: button, exact: true }).click();
  await expect(dialog).toHaveCount(0);
}

async function show(view: 'backends' | 'gallery') {
  await page.getByTestId(`nav-${view}`).click();
}

test.beforeAll(async ({ browser }) => {
  session = await openSession(browser, 'e2e');
  ({ gallery, agent, page, pageErrors } = session);
});

test.afterAll(async () => {
  await session?.close();
});

test('1. fresh start shows the starter gallery; installing echo shows progress and adds its row', async () => {
  await page.goto(agent.pageUrl);
  await expect(page.getByTestId('backends-empty')).toBeVisible();
  expect(page.url(), 'the token is stripped from the address bar').not.toContain('token=');
  await shot(page, '01-empty');

  await show('gallery');
  const entry = page.getByTestId('gallery-entry-echo');
  await expect(entry).toBeVisible();
  await shot(page, '01-gallery');

  await watchFor(page, 'install-progress', '[data-testid="gallery-entry-echo"] [data-testid="job-progress"]');
  await entry.getByRole('button', { name: 'Install', exact: true }).click();
  await expect(entry.getByText('installed', { exact: true })).toBeVisible();
  expect(await seenAt(page, 'install-progress'), 'the install showed its progress').not.toBeNull();
  await shot(page, '01-installed');

  await show('backends');
  await expect(row('echo')).toBeVisible();
  await expect(row('echo').getByTestId('backend-version')).toHaveText('1.0.0');
  await shot(page, '01-backends');
});

test('2. loading m1 from the UI shows a PID chip that matches hangar ps', async () => {
  const result = await loadFromUi('echo', 'm1');
  await expect(result).toContainText('loaded m1');
  await expect(chip('m1')).toBeVisible();
  const [process] = (await agent.ps()).filter((p) => p.model === 'm1');
  expect(process, 'hangar ps lists m1').toBeDefined();
  expect(await pidOf('m1')).toBe(process!.pid);
  await shot(page, '02-loaded');

  await chip('m1').getByRole('button', { name: 'Logs' }).click();
  const drawer = page.getByTestId('logs-drawer');
  await expect(drawer.getByTestId('log-body')).toContainText('echo: listening on');
  await shot(page, '02-logs');
  await page.keyboard.press('Escape');
  await expect(drawer).toHaveCount(0);
});

test('3. an out-of-band swap of the echo dir turns the m1 chip red with a stale cwd badge', async () => {
  const badge = chip('m1').getByTestId('stale-badge');
  await expect(badge).toHaveCount(0);
  await watchFor(page, 'stale', '[data-testid="process-m1"] [data-testid="stale-badge"]');
  const swappedAt = await swapOutOfBand(join(agent.home, 'backends'), 'echo', '1.0.0-swapped');
  await expect(badge).toHaveText('stale cwd');
  const appearedAt = await seenAt(page, 'stale');
  expect(appearedAt).not.toBeNull();
  console.log(`stale badge latency: ${(appearedAt! - swappedAt).toFixed(1)} ms after the out-of-band rename`);

  await page.mouse.move(0, 0);
  await shot(page, '03-stale');
  await page.emulateMedia({ colorScheme: 'dark' });
  await shot(page, '03-stale-dark');
  await page.emulateMedia({ colorScheme: 'light' });

  await badge.focus();
  const tooltip = chip('m1').getByTestId('stale-tooltip');
  await expect(tooltip).toBeVisible();
  await expect(tooltip).toContainText('echo.install-backup');
  await docShot(page, 'screenshot-stale');
  await badge.blur();
});

test('4. Respawn clears the badge, changes the PID, and a new load reports the swapped-in version', async () => {
  const before = await pidOf('m1');
  await chip('m1').getByRole('button', { name: 'Respawn' }).click();
  await expect(chip('m1').getByTestId('stale-badge')).toHaveCount(0);
  await expect.poll(() => pidOf('m1')).not.toBe(before);
  const result = await loadFromUi('echo', 'm1');
  await expect(result).toContainText('1.0.0-swapped');
  await shot(page, '04-respawned');
});

test('5. upgrading echo from the gallery respawns m1 from the new directory', async () => {
  await gallery.setVersion('echo', '1.1.0');
  const upgrade = row('echo').getByRole('button', { name: 'Upgrade', exact: true });
  await expect(upgrade).toBeEnabled();
  await expect(row('echo').getByTestId('backend-available-version')).toHaveText('1.1.0');
  await page.mouse.move(0, 0);
  await docShot(page, 'upgrade-1-available');

  const before = await pidOf('m1');
  await watchFor(page, 'upgrade-progress', '[data-testid="backend-row-echo"] [data-testid="job-progress"]');
  await upgrade.click();
  await expect(page.getByRole('dialog', { name: 'Upgrade echo?' }).getByTestId('impact')).toContainText('Will restart 1 process (m1).');
  await docShot(page, 'upgrade-2-confirm');
  await confirm('Upgrade echo?', 'Upgrade');
  await expect(row('echo').getByTestId('backend-version')).toHaveText('1.1.0');
  expect(await seenAt(page, 'upgrade-progress'), 'the upgrade showed its progress').not.toBeNull();
  await expect(row('echo').getByTestId('job-progress')).toHaveCount(0);
  await expect.poll(() => pidOf('m1')).not.toBe(before);
  await expect(chip('m1').getByTestId('stale-badge')).toHaveCount(0);
  const [process] = (await agent.ps()).filter((p) => p.model === 'm1');
  expect(process!.pid).toBe(await pidOf('m1'));
  expect(process!.cwd).toBe('ok');
  await expect(await loadFromUi('echo', 'm1')).toContainText('echo 1.1.0');
  await docShot(page, 'upgrade-3-done');
});

test('6. an install with a wrong sha256 fails with a clear error and leaves echo working', async () => {
  const uri = await gallery.pack('echo', 'echo-badsum.tar.gz');
  await gallery.addEntry({ name: 'echo-badsum', uri, version: '9.9.9', sha256: '0'.repeat(64), description: 'echo with a wrong checksum' });
  await show('gallery');
  const entry = page.getByTestId('gallery-entry-echo-badsum');
  await expect(entry).toBeVisible();
  await entry.getByRole('button', { name: 'Install', exact: true }).click();
  const error = entry.getByTestId('job-error');
  await expect(error).toBeVisible();
  await expect(error).toContainText(/sha256/i);
  await expect(error).toContainText('echo-badsum');
  await shot(page, '06-bad-sha256');

  await show('backends');
  await expect(row('echo-badsum')).toHaveCount(0);
  await expect(await loadFromUi('echo', 'm2')).toContainText('loaded m2');
  await expect(chip('m2')).toBeVisible();
  await shot(page, '06-echo-still-works');
});

test('7. Rollback brings the previous version back', async () => {
  const previousVersion = (await row('echo').getByTestId('backend-previous').textContent())!;
  expect(previousVersion).not.toBe('1.1.0');
  await row('echo').getByRole('button', { name: 'Rollback' }).click();
  await confirm(`Roll echo back to ${previousVersion}?`, 'Rollback');
  await expect(row('echo').getByTestId('backend-version')).toHaveText(previousVersion);
  await expect(row('echo').getByTestId('job-error')).toHaveCount(0);
  await expect(await loadFromUi('echo', 'm1'), 'the tree from before the upgrade is live again').toContainText('1.0.0-swapped');
  await shot(page, '07-rolled-back');
});

test('Delete asks for confirmation, then removes the backend and its processes', async () => {
  await row('echo').getByRole('button', { name: 'Delete' }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete echo?' });
  await expect(dialog).toBeVisible();
  await shot(page, '08-delete-confirm');
  await dialog.getByRole('button', { name: 'Delete' }).click();
  await expect(row('echo')).toHaveCount(0);
  await expect(page.getByTestId('backends-empty')).toBeVisible();
  expect(await agent.ps()).toEqual([]);
});

test('without a token the page asks for one and rejects a wrong one', async ({ browser }) => {
  const fresh = await browser.newPage();
  try {
    await fresh.goto(agent.url);
    const input = fresh.getByTestId('token-input');
    await input.fill('not-the-token');
    await fresh.getByRole('button', { name: 'Connect' }).click();
    await expect(fresh.getByRole('alert')).toContainText('rejected');
    await input.fill(agent.token);
    await fresh.getByRole('button', { name: 'Connect' }).click();
    await expect(fresh.getByTestId('backends-empty')).toBeVisible();
  } finally {
    await fresh.close();
  }
});

test('the page ran without CSP violations or uncaught errors', async () => {
  const violations = pageErrors.filter((e) => /Content Security Policy|Refused to/i.test(e));
  expect(violations).toEqual([]);
  expect(pageErrors.filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
});
