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
import { shot } from './fixtures/page.ts';
import { openSession, type Session } from './fixtures/session.ts';
import { serveSlowly, type SlowServer } from './fixtures/slow-server.ts';

test.describe.configure({ mode: 'serial' });

let session: Session;
let gallery: TestGallery;
let agent: RunningAgent;
let page: Page;
let slow: SlowServer;

const row = (name: string): Locator => page.getByTestId(`backend-row-${name}`);
const entry = (name: string): Locator => page.getByTestId(`gallery-entry-${name}`);
const show = (view: 'backends' | 'gallery' | 'processes') => page.getByTestId(`nav-${view}`).click();

test.beforeAll(async ({ browser }) => {
  session = await openSession(browser, 'e2e-trust', {
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
  await shot(page, 'trust-01-progress');
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
