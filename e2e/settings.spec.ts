// The Settings view against real agents: galleries added, ordered and turned off with the gallery following at
// once, switches and ports kept by the node, values refused in the form before they are sent, and what the agent's
// start fixed shown as fixed.
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAgent, type RunningAgent } from './fixtures/agent.ts';
import { copyStarterGallery } from './fixtures/gallery.ts';
import { collectErrors, docShot, shot } from './fixtures/page.ts';

test.describe.configure({ mode: 'serial' });

let root: string;
let agent: RunningAgent;
let page: Page;
let pageErrors: string[];
let extraGallery: string;

test.beforeAll(async ({ browser }) => {
  root = await mkdtemp(join(tmpdir(), 'hangar-e2e-settings-'));
  extraGallery = (await copyStarterGallery(join(root, 'more'))).index;
  agent = await startAgent({ home: join(root, 'home') });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  pageErrors = collectErrors(page);
  await page.goto(agent.pageUrl);
  await page.getByTestId('nav-settings').click();
});

test.afterAll(async () => {
  await page?.close();
  await agent?.stop();
  await rm(root, { recursive: true, force: true });
});

async function savedSettings(): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(join(agent.home, 'state', 'settings.json'), 'utf8')) as Record<string, unknown>;
}

test('a gallery added here shows in the Gallery at once, and turning the starter off hides its entries', async () => {
  await expect(page.getByTestId('settings-gallery-starter')).toContainText('The gallery that ships with Hangar');
  await page.getByTestId('settings-gallery-location').fill('not a place');
  await expect(page.getByTestId('settings-gallery-add')).toBeDisabled();
  await expect(page.getByRole('form', { name: 'Add a gallery' })).toContainText('an absolute path, or an http(s):// or file:// URL');
  // Typed a key at a time, the URL is not one until its host: the name's hint follows it, and the page stays.
  await page.getByTestId('settings-gallery-location').fill('');
  await page.getByTestId('settings-gallery-location').pressSequentially('http://127.0.0.1:1/index.yaml');
  await expect(page.getByTestId('settings-gallery-name')).toHaveAttribute('placeholder', '127.0.0.1-1-index');
  await page.getByTestId('settings-gallery-location').fill(extraGallery);
  await page.getByTestId('settings-gallery-name').fill('more');
  await page.getByTestId('settings-gallery-add').click();
  await expect(page.getByTestId('settings-gallery-more')).toContainText(extraGallery);
  await page.getByRole('button', { name: 'Move more up' }).click();
  await expect(page.getByTestId('settings-galleries').locator('li').first()).toHaveAttribute('data-testid', 'settings-gallery-more');
  await page.getByRole('checkbox', { name: 'Read the starter gallery' }).uncheck();
  await page.getByRole('region', { name: 'Cluster', exact: true }).scrollIntoViewIfNeeded();
  await docShot(page, 'screenshot-settings');

  await page.getByTestId('nav-gallery').click();
  await expect(page.getByTestId('gallery-entry-echo')).toContainText('more');
  const saved = await savedSettings();
  expect(saved.galleries).toEqual([
    { name: 'more', location: extraGallery, enabled: true },
    { name: 'starter', location: 'starter', enabled: false },
  ]);
  await page.getByTestId('nav-settings').click();
});

test('a gallery the node cannot read is refused in the form, in the CLI\'s words, keeping what was typed; Add anyway adds it', async () => {
  const before = (await savedSettings()).galleries as unknown[];
  const missing = join(root, 'nowhere', 'index.yaml');
  const location = page.getByTestId('settings-gallery-location');
  const name = page.getByTestId('settings-gallery-name');
  await location.fill(missing);
  await name.fill('later');
  await page.getByTestId('settings-gallery-add').click();
  const refused = page.getByTestId('settings-gallery-refused');
  await expect(refused).toHaveText(`${missing} does not exist: the gallery was not added`);
  await expect(location).toHaveValue(missing);
  await expect(name).toHaveValue('later');
  await expect(page.getByTestId('settings-gallery-later')).toHaveCount(0);
  expect((await savedSettings()).galleries).toEqual(before);
  const cli = await agent.cli('galleries', 'add', missing).then(
    () => null,
    (error: { stderr: string }) => error.stderr,
  );
  expect(cli).toBe(`hangar: ${await refused.textContent()} (--force adds it anyway)\n`);
  await shot(page, 'settings-gallery-refused');

  await page.getByTestId('settings-gallery-force').click();
  await expect(page.getByTestId('settings-gallery-later')).toContainText(missing);
  await expect(refused).toHaveCount(0);
  await expect(location).toHaveValue('');
  expect((await savedSettings()).galleries).toEqual([...before, { name: 'later', location: missing, enabled: true }]);
  await page.getByRole('button', { name: 'Remove later' }).click();
  await expect(page.getByTestId('settings-gallery-later')).toHaveCount(0);
});

test('switches and ports are kept by the node; a bad range is refused before it is sent', async () => {
  await page.getByTestId('setting-keep-running').check();
  await expect(page.getByTestId('setting-smoke-start')).toBeChecked();
  await page.getByTestId('setting-smoke-start').uncheck();
  await page.getByTestId('setting-port-from').fill('31000');
  await page.getByTestId('setting-port-to').fill('30000');
  await expect(page.getByTestId('setting-ports-apply')).toBeDisabled();
  await expect(page.getByTestId('setting-ports-note')).toContainText('The port range is reversed: its first port must not be above its last');
  await page.getByTestId('setting-port-to').fill('31099');
  await page.getByTestId('setting-ports-apply').click();
  // The form is off while the change is sent; on again, with Apply off, once the node's view holds the new range.
  await expect(page.getByTestId('setting-port-from')).toBeEnabled();
  await expect(page.getByTestId('setting-ports-apply')).toBeDisabled();
  const saved = await savedSettings();
  expect(saved.keepBackendsRunning).toBe(true);
  expect(saved.smokeStart).toBe(false);
  expect(saved.portRange).toEqual([31000, 31099]);
  expect(JSON.parse(await agent.cli('settings', '--json')).settings.portRange).toEqual([31000, 31099]);
});

test('a change made elsewhere shows here at once', async () => {
  await agent.cli('settings', 'auto-upgrade', 'on');
  await expect(page.getByTestId('setting-auto-upgrade')).toBeChecked();
  await expect(page.getByTestId('setting-auto-upgrade-hours')).toBeEnabled();
});

test("a backend's own start timeout is added for an installed backend, changed, kept by the node and removed", async () => {
  await agent.cli('install', 'echo');
  await page.getByTestId('add-start-timeout-backend').selectOption('echo');
  await page.getByTestId('add-start-timeout').click();
  const own = page.getByTestId('setting-start-timeout-echo');
  await expect(own).toHaveValue('600');
  await own.fill('5');
  await expect(page.getByTestId('backend-start-timeouts')).toContainText('A start may take 10 s to a day');
  await own.fill('3600');
  await own.press('Enter');
  await expect.poll(async () => (await savedSettings()).backendStartTimeoutSec).toEqual({ echo: 3600 });
  expect(await agent.cli('settings')).toMatch(/start-timeout --backend echo +3600 s/);
  await page.getByTestId('remove-start-timeout-echo').click();
  await expect(own).toHaveCount(0);
  await expect.poll(async () => (await savedSettings()).backendStartTimeoutSec).toEqual({});
});

test("the cluster section says the agent runs on its own, and that an agent's cluster comes with its start: nothing to edit", async () => {
  const cluster = page.getByRole('region', { name: 'Cluster', exact: true });
  await expect(page.getByTestId('cluster-state')).toHaveText('This agent runs on its own: it was started in no cluster.');
  await expect(cluster).toContainText('joining one takes a restart of the agent');
  await expect(cluster.getByRole('textbox')).toHaveCount(0);
  await expect(cluster.getByRole('button')).toHaveCount(0);
  await expect(cluster).not.toContainText('This app');
});

test('galleries fixed by how the agent was started are shown as fixed', async ({ browser }) => {
  const fixedRoot = await mkdtemp(join(tmpdir(), 'hangar-e2e-settings-fixed-'));
  const fixedAgent = await startAgent({ home: join(fixedRoot, 'home'), gallery: extraGallery });
  const fixedPage = await browser.newPage();
  try {
    await fixedPage.goto(fixedAgent.pageUrl);
    await fixedPage.getByTestId('nav-settings').click();
    const galleries = fixedPage.getByRole('region', { name: 'Galleries' });
    await expect(galleries).toContainText('Set when this node was started');
    await expect(galleries.getByRole('checkbox').first()).toBeDisabled();
    await expect(fixedPage.getByTestId('settings-gallery-add')).toBeDisabled();
  } finally {
    await fixedPage.close();
    await fixedAgent.stop();
    await rm(fixedRoot, { recursive: true, force: true });
  }
});

test('the page ran without uncaught errors', () => {
  expect(pageErrors).toEqual([]);
});
