// What a new user sees and relies on, against a real agent: readable progress, buttons that stay put and say what
// they will do, a UI that knows when the agent is gone, messages that are current and dismissable, an honest gallery,
// keyboard use and an axe check.
import { expect, test } from '@playwright/test';
import type { Locator, Page } from '@playwright/test';
import { randomBytes } from 'node:crypto';
import { cp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunningAgent } from './fixtures/agent.ts';
import type { TestGallery } from './fixtures/gallery.ts';
import { docShot, seriousViolations, shot } from './fixtures/page.ts';
import { openSession, type Session } from './fixtures/session.ts';
import { serveSlowly, type SlowServer } from './fixtures/slow-server.ts';

test.describe.configure({ mode: 'serial' });

let session: Session;
let gallery: TestGallery;
let agent: RunningAgent;
let page: Page;
let slow: SlowServer;

/** The hangar CLI's own flags (a backend's command line in the Processes view may show its own). */
const HANGAR_FLAGS = /--(force|refresh|home|node|token|token-file|ports|listen|json|all|backend|follow|gallery|max-install-size|stall-timeout|auto-upgrade)\b/;

const row = (name: string): Locator => page.getByTestId(`backend-row-${name}`);
const entry = (name: string): Locator => page.getByTestId(`gallery-entry-${name}`);
const show = (view: 'backends' | 'gallery' | 'processes' | 'notifications') => page.getByTestId(`nav-${view}`).click();

test.beforeAll(async ({ browser }) => {
  session = await openSession(browser, 'e2e-trust', {
    args: ['--ports', '29500-29549'], // a range of its own: other hosts on this machine use the default one
    prepare: async (g) => {
      // A 640 KiB backend served at 160 KiB/s: long enough to read its progress.
      await cp(join(g.dir, 'echo'), join(g.dir, 'bigecho'), { recursive: true });
      await writeFile(join(g.dir, 'bigecho', 'weights.bin'), randomBytes(640 * 1024));
      await g.pack('bigecho', 'bigecho.tar.gz');
      slow = await serveSlowly(join(g.dir, 'bigecho.tar.gz'), 160 * 1024);
      await g.addEntry({ name: 'bigecho', uri: `${slow.url}/bigecho.tar.gz`, version: '2.0.0', description: 'echo with weights, served slowly' });
    },
  });
  ({ gallery, agent, page } = session);
  await page.goto(agent.pageUrl);
  await expect(page.getByTestId('backends-empty')).toBeVisible();
});

test.afterAll(async () => {
  await session?.close();
  await slow?.close();
});

test('a download shows percent, speed and time left in IEC units', async () => {
  await show('gallery');
  await entry('bigecho').getByRole('button', { name: 'Install', exact: true }).click();
  const figures = entry('bigecho').getByTestId('job-bytes');
  await expect(figures).toHaveText(/^[\d.]+ (B|KiB) of [\d.]+ KiB · \d+% · [\d.]+ KiB\/s · \d+s left$/);
  await docShot(page, 'screenshot-progress');
  await expect(entry('bigecho').getByText('installed', { exact: true })).toBeVisible({ timeout: 30_000 });
});

test('actions keep their slots and each one previews its impact before it runs', async () => {
  await entry('echo').getByRole('button', { name: 'Install', exact: true }).click();
  await expect(entry('echo').getByText('installed', { exact: true })).toBeVisible();
  await show('backends');
  for (const model of ['m1', 'm2']) {
    await row('echo').getByTestId('load-model-input').fill(model);
    await row('echo').getByRole('button', { name: 'Load', exact: true }).click();
    await expect(page.getByTestId(`process-${model}`)).toBeVisible();
  }
  const reinstall = row('echo').getByTestId('action-reinstall');
  await expect(row('echo').getByTestId('action-rollback')).toBeDisabled();
  await expect(row('echo').getByTestId('action-upgrade')).toHaveAttribute('title', 'Up to date with its gallery');
  const before = await reinstall.boundingBox();

  await gallery.setVersion('echo', '1.0.1');
  await expect(row('echo').getByTestId('action-upgrade')).toBeEnabled();
  await row('echo').getByTestId('action-upgrade').click();
  const upgrade = page.getByRole('dialog', { name: 'Upgrade echo?' });
  await expect(upgrade.getByTestId('impact').getByRole('listitem')).toHaveText(
    ['Installs echo 1.0.1 in place of 1.0.0.', 'Will restart 2 processes (m1, m2).', '1.0.0 becomes the rollback target.'],
  );
  await shot(page, 'trust-02-upgrade-impact');
  await upgrade.getByRole('button', { name: 'Upgrade', exact: true }).click();
  await expect(row('echo').getByTestId('backend-version')).toHaveText('1.0.1');
  await expect(row('echo').getByTestId('action-rollback')).toBeEnabled();
  expect(await reinstall.boundingBox(), 'Rollback appearing moved nothing').toEqual(before);

  await reinstall.click();
  const again = page.getByRole('dialog', { name: 'Reinstall echo?' });
  await expect(again.getByTestId('impact')).toContainText('Will restart 2 processes (m1, m2).');
  await expect(again.getByTestId('impact')).toContainText('The rollback target 1.0.0 is kept.');
  await again.getByRole('button', { name: 'Cancel' }).click();
  await expect(again).toHaveCount(0);

  await page.getByTestId('process-m2').getByRole('button', { name: 'Stop' }).click();
  const stop = page.getByRole('dialog', { name: 'Stop m2?' });
  await expect(stop.getByTestId('impact')).toContainText('Will stop 1 process (m2, PID');
  await stop.getByRole('button', { name: 'Stop', exact: true }).click();
  await expect(page.getByTestId('process-m2')).toHaveCount(0);
  await shot(page, 'trust-02-slots');
});

test('while the agent is down the node turns amber, uptimes stop, actions are off and clicks are dropped; back, the state is read again', async () => {
  const connection = page.getByTestId('node-connection');
  await expect(connection).toHaveAttribute('data-status', 'open');
  const uptime = page.getByTestId('process-m1').getByText(/^up /);
  await agent.stop();
  await expect(connection).toHaveAttribute('data-status', 'reconnecting');
  await expect(page.getByTestId('node-link')).toHaveText('unreachable');
  await expect(page.getByTestId('connection-banner')).toContainText('cannot be reached');
  const reinstall = row('echo').getByTestId('action-reinstall');
  await expect(reinstall).toBeDisabled();
  await expect(reinstall).toHaveAttribute('title', /cannot be reached/);
  await expect(row('echo').getByRole('button', { name: 'Load', exact: true })).toBeDisabled();
  const frozen = await uptime.textContent();
  await page.waitForTimeout(2100);
  expect(await uptime.textContent(), 'the uptime stands still').toBe(frozen);
  await reinstall.click({ force: true });
  await expect(page.getByRole('dialog')).toHaveCount(0);
  await shot(page, 'trust-03-disconnected');

  await gallery.setVersion('echo', '1.0.2'); // only a fresh read can know this
  await agent.start();
  await expect(connection).toHaveAttribute('data-status', 'open');
  await expect(row('echo').getByTestId('backend-available-version')).toHaveText('1.0.2');
  await expect(row('echo').getByTestId('backend-version')).toHaveText('1.0.1');
  await expect(row('echo').getByTestId('job-progress'), 'the dropped click did not run later').toHaveCount(0);
  const models = (await agent.ps()).map((p) => p.model).sort();
  await expect(row('echo').locator('[data-testid^="process-"]')).toHaveCount(models.length);
  await shot(page, 'trust-03-reconnected');

  await page.getByRole('button', { name: 'Upgrade all' }).click();
  const all = page.getByRole('dialog', { name: 'Upgrade 1 backend?' });
  await expect(all.getByTestId('impact')).toContainText('Upgrades echo 1.0.1 → 1.0.2.');
  await all.getByRole('button', { name: 'Cancel' }).click();
  await expect(all).toHaveCount(0);
});

test('messages are current and dismissable, names are checked before sending, and notifications are kept', async () => {
  const input = row('echo').getByTestId('load-model-input');
  const load = row('echo').getByRole('button', { name: 'Load', exact: true });
  await input.fill('my model!');
  await expect(row('echo').getByTestId('load-problem')).toHaveText(
    'Model names can use letters, digits, -, _, ., : and +, start with a letter or digit, and have at most 128 characters',
  );
  await expect(load).toBeDisabled();
  await expect(input).toHaveAttribute('aria-invalid', 'true');
  await shot(page, 'trust-04-invalid-name');

  await input.fill('m1');
  await load.click();
  const result = row('echo').getByTestId('load-result');
  await expect(result).toContainText('loaded m1 with echo 1.0.1');
  await row('echo').getByTestId('action-rollback').click();
  await page.getByRole('dialog', { name: 'Roll echo back to 1.0.0?' }).getByRole('button', { name: 'Rollback', exact: true }).click();
  await expect(row('echo').getByTestId('backend-version')).toHaveText('1.0.0');
  await expect(result, 'what was said about 1.0.1 is gone after the rollback').toHaveCount(0);

  await input.fill('m3');
  await load.click();
  await expect(result).toContainText('loaded m3 with echo 1.0.0');
  await result.getByRole('button', { name: 'Dismiss' }).click();
  await expect(result).toHaveCount(0);

  const uri = await gallery.pack('echo', 'echo-badsum.tar.gz');
  await gallery.addEntry({ name: 'echo-badsum', uri, version: '9.9.9', sha256: '0'.repeat(64) });
  await show('gallery');
  await entry('echo-badsum').getByRole('button', { name: 'Install', exact: true }).click();
  const failed = entry('echo-badsum').getByTestId('job-error');
  await expect(failed).toContainText(/sha256/i);
  await expect(page.getByTestId('toast')).toContainText('install echo-badsum failed');
  await failed.getByRole('button', { name: 'Dismiss' }).click();
  await expect(failed).toHaveCount(0);

  await show('notifications');
  const notices = page.getByTestId('notifications');
  await expect(notices).toContainText('install echo-badsum failed');
  await expect(notices).toContainText('rollback echo finished');
  await expect(notices).toContainText('loaded m3 with echo 1.0.0');
  await shot(page, 'trust-04-notifications');
  for (const view of ['backends', 'gallery', 'processes', 'notifications'] as const) {
    await show(view);
    expect(await page.locator('main').innerText(), `the ${view} view shows no CLI flag`).not.toMatch(HANGAR_FLAGS);
  }
});

test('gallery entries name their gallery from its configuration and show their source and state in words', async () => {
  await show('gallery');
  const echo = entry('echo');
  await expect(echo.getByTestId('entry-gallery'), 'the folder of index.yaml, not "index"').toHaveText('gallery');
  await expect(echo.getByTestId('entry-source')).toHaveText('./echo');
  const installed = echo.getByText('installed', { exact: true });
  await expect(installed).toBeVisible();
  // As the Backends view says it: the version installed, then the one offered, after the word installed.
  const from = echo.getByTestId('entry-installed-version');
  const to = echo.getByTestId('entry-available-version');
  await expect(from).toHaveText('1.0.0');
  await expect(to).toHaveText('1.0.2');
  const [badgeX, fromX, toX] = await Promise.all([installed, from, to].map(async (l) => (await l.boundingBox())!.x));
  expect(badgeX! < fromX! && fromX! < toX!, 'installed, then 1.0.0, then 1.0.2, left to right').toBe(true);
  await expect(echo).not.toContainText('update available');
  await expect(entry('bigecho').getByTestId('entry-source')).toHaveText(`${slow.url}/bigecho.tar.gz`);
  await shot(page, 'trust-05-gallery');
  await echo.getByRole('button', { name: 'Upgrade', exact: true }).click();
  const upgrade = page.getByRole('dialog', { name: 'Upgrade echo?' });
  await expect(upgrade.getByTestId('impact')).toContainText('Installs echo 1.0.2 in place of 1.0.0.');
  await upgrade.getByRole('button', { name: 'Cancel' }).click();
  await expect(upgrade).toHaveCount(0);
});

test('axe finds no serious violation in any view or in a confirmation', async () => {
  for (const view of ['backends', 'gallery', 'processes', 'notifications'] as const) {
    await show(view);
    await expect(page.locator('main h1')).toBeVisible();
    expect(await seriousViolations(page), `the ${view} view`).toEqual([]);
  }
  await page.emulateMedia({ colorScheme: 'dark' });
  for (const view of ['backends', 'gallery'] as const) {
    await show(view);
    expect(await seriousViolations(page), `the ${view} view in dark mode`).toEqual([]);
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await show('backends');
  await row('echo').getByTestId('action-delete').click();
  await expect(page.getByRole('dialog')).toBeVisible();
  expect(await seriousViolations(page), 'the Delete confirmation').toEqual([]);
  await page.keyboard.press('Escape');
  await expect(page.getByRole('dialog')).toHaveCount(0);
});

test('every action works from the keyboard with a visible focus ring', async () => {
  await show('backends');
  const reinstall = row('echo').getByTestId('action-reinstall');
  await row('echo').getByTestId('action-upgrade').focus();
  await page.keyboard.press('Tab');
  await expect(reinstall).toBeFocused();
  const ring = await reinstall.evaluate((el) => getComputedStyle(el).outlineStyle + ' ' + getComputedStyle(el).outlineWidth);
  expect(ring).toBe('solid 2px');
  await shot(page, 'trust-06-focus');
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog', { name: 'Reinstall echo?' });
  await expect(dialog).toBeVisible();
  await expect(dialog.getByRole('button', { name: 'Cancel' }), 'the dialog opens on its safe choice').toBeFocused();
  await page.keyboard.press('Escape');
  await expect(dialog).toHaveCount(0);

  // The load form: type, Enter loads; a process's Stop is reached by Tab too.
  await row('echo').getByTestId('load-model-input').focus();
  await page.keyboard.type('m5');
  await page.keyboard.press('Enter');
  await expect(row('echo').getByTestId('load-result')).toContainText('loaded m5');
  const stop = page.getByTestId('process-m5').getByRole('button', { name: 'Stop' });
  await page.getByTestId('process-m5').getByRole('button', { name: 'Respawn' }).focus();
  await page.keyboard.press('Tab');
  await expect(page.getByTestId('process-m5').getByRole('button', { name: 'Unload' })).toBeFocused();
  await page.keyboard.press('Tab');
  await expect(stop).toBeFocused();
  await page.keyboard.press('Enter');
  await page.getByRole('dialog', { name: 'Stop m5?' }).getByRole('button', { name: 'Stop', exact: true }).press('Enter');
  await expect(page.getByTestId('process-m5')).toHaveCount(0);
});

test('a 900 px wide window keeps every action on screen without sideways scrolling', async () => {
  await page.setViewportSize({ width: 900, height: 760 });
  for (const view of ['backends', 'gallery', 'notifications'] as const) {
    await show(view);
    await expect(page.locator('main h1')).toBeVisible();
    expect(await page.evaluate(() => document.documentElement.scrollWidth), `the ${view} view`).toBeLessThanOrEqual(900);
  }
  await show('backends');
  for (const action of ['upgrade', 'reinstall', 'rollback', 'delete']) {
    const box = (await row('echo').getByTestId(`action-${action}`).boundingBox())!;
    expect(box.x + box.width, `${action} is on screen`).toBeLessThanOrEqual(900);
  }
  await shot(page, 'trust-06-narrow');
  await show('gallery');
  await shot(page, 'trust-06-narrow-gallery');
  await page.setViewportSize({ width: 1280, height: 860 });
});
