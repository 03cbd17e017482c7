// LocalAI run by Hangar, in the UI: a real agent fetching LocalAI's releases from a local release server (the stand-in
// written from LocalAI's code as the `local-ai` binary). Settings → LocalAI installs it, starts it, finds and installs
// a newer release as a gated swap, rolls it back, shows its logs, and stops it; a release with a wrong checksum is
// refused in words. After an upgrade, a backend whose OCI tag (a real registry) got a new image is marked, and the
// panel's Upgrade all clears it.
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hostPlatform } from '../electron/core/install/oci/platform.ts';
import { buildLayer, directoryEntries, pushImage } from '../electron/core/install/oci/testing/image.ts';
import { startRegistry, type TestRegistry } from '../electron/core/install/oci/testing/registry.ts';
import { echoSource } from '../electron/core/testing/fixtures.ts';
import { releasePlatform } from '../electron/localai/runner/release.ts';
import { StandInReleases } from '../electron/localai/testing/standin-releases.ts';
import type { RunningAgent } from './fixtures/agent.ts';
import { seriousViolations } from './fixtures/page.ts';
import { openSession, type Session } from './fixtures/session.ts';

test.describe.configure({ mode: 'serial' });

let session: Session;
let agent: RunningAgent;
let page: Page;
let releases: StandInReleases;
let releasesDir: string;
let registry: TestRegistry;

/** Pushes echo `version` to the tag the gallery's echo-oci names. */
async function pushEcho(version: string): Promise<void> {
  const layer = await buildLayer(await directoryEntries(await echoSource(releasesDir, version)));
  await pushImage(registry.url, 'backends/echo', 'latest', { layers: [layer], platforms: [hostPlatform()] });
}

test.beforeAll(async ({ browser }) => {
  releasesDir = await mkdtemp(join(tmpdir(), 'hangar-e2e-releases-'));
  releases = new StandInReleases(releasesDir, releasePlatform()!);
  await releases.start();
  await releases.publish({ version: 'v3.2.0' });
  registry = await startRegistry();
  await pushEcho('1.0.0');
  session = await openSession(browser, 'e2e-localai-run', {
    args: ['--localai-releases', releases.url],
    prepare: (gallery) => gallery.addEntry({ name: 'echo-oci', uri: `${registry.host}/backends/echo:latest` }),
  });
  ({ agent, page } = session);
});

test.afterAll(async () => {
  await session?.close();
  await releases?.stop();
  await registry?.stop();
  if (releasesDir) await rm(releasesDir, { recursive: true, force: true });
});

test("Settings opens on LocalAI, the node's own settings below it, none left out", async () => {
  await page.goto(agent.pageUrl);
  await page.getByTestId('nav-settings').click();
  await expect(page.getByTestId('localai-run-settings')).toBeInViewport();
  const titles = page.locator('.settings-sections > .settings-section > h2');
  await expect(titles.first()).toHaveText('LocalAI');
  await expect(titles).toHaveText(['LocalAI', 'LocalAI server', 'Galleries', 'Upgrades', 'Backends', 'Labels', 'Cluster', 'Invite a machine', 'Join with an invitation', 'LocalAI cluster']);
});

test('Settings → LocalAI installs LocalAI and starts it', async () => {
  await page.goto(agent.pageUrl);
  await page.getByTestId('nav-settings').click();
  const panel = page.getByTestId('localai-run-settings');
  const state = panel.getByTestId('localai-run-state');
  await expect(state).toHaveText('LocalAI is not installed.');
  await panel.getByTestId('localai-install').click();
  await expect(state).toHaveText('LocalAI v3.2.0: stopped.');
  await expect(panel.getByTestId('localai-run-operation')).toContainText('Last install: LocalAI v3.2.0 installed (sha256');
  await panel.getByTestId('localai-start').click();
  await expect(state).toHaveText(/^LocalAI v3\.2\.0: ready \(pid \d+\) at http:\/\/127\.0\.0\.1:\d+\.$/);
  expect(await seriousViolations(page)).toEqual([]);
});

test('a newer release is offered and installed as a gated swap, and rolled back on request', async () => {
  const panel = page.getByTestId('localai-run-settings');
  const state = panel.getByTestId('localai-run-state');
  await releases.publish({ version: 'v3.3.0' });
  await panel.getByTestId('localai-check').click();
  await expect(panel.getByTestId('localai-upgrade')).toHaveText('Upgrade to v3.3.0');
  await panel.getByTestId('localai-upgrade').click();
  await expect(state).toHaveText(/^LocalAI v3\.3\.0: ready \(pid \d+\)/);
  await expect(panel.getByTestId('localai-run-operation')).toHaveText('Last upgrade: LocalAI v3.2.0 → v3.3.0');
  await expect(panel.getByTestId('localai-check')).toBeVisible();
  await panel.getByTestId('localai-rollback').click();
  await expect(state).toHaveText(/^LocalAI v3\.2\.0: ready \(pid \d+\)/);
  await expect(panel.getByTestId('localai-run-operation')).toHaveText('Last rollback: LocalAI v3.3.0 → v3.2.0 (rollback)');
});

test('a release whose checksum is wrong is refused in words, and LocalAI keeps running', async () => {
  const panel = page.getByTestId('localai-run-settings');
  await releases.publish({ version: 'v3.4.0' }, 'wrong');
  await panel.getByTestId('localai-check').click();
  // Until the check answers, the release the last check found (v3.3.0) is the one offered.
  await expect(panel.getByTestId('localai-upgrade')).toHaveText('Upgrade to v3.4.0');
  await panel.getByTestId('localai-upgrade').click();
  await expect(panel.getByTestId('localai-run-operation')).toContainText('Last upgrade: refused LocalAI v3.4.0: its sha256 is not the one its checksums file lists; nothing was installed (local-ai-v3.4.0-');
  await expect(panel.getByTestId('localai-run-state')).toHaveText(/^LocalAI v3\.2\.0: ready/);
});

test('its logs are shown, and Stop stops it', async () => {
  const panel = page.getByTestId('localai-run-settings');
  await panel.getByTestId('localai-logs-toggle').click();
  await expect(panel.getByTestId('localai-logs')).toContainText('LocalAI API is listening!');
  await panel.getByTestId('localai-stop').click();
  await expect(panel.getByTestId('localai-run-state')).toHaveText('LocalAI v3.2.0: stopped.');
  await expect(panel.getByTestId('localai-logs')).toContainText('Received SIGINT, shutting down');
  // The log box scrolls: it is reachable by keyboard.
  expect(await seriousViolations(page)).toEqual([]);
});

test("after LocalAI's upgrade, a backend whose tag has a new image is marked, and Upgrade all clears the mark", async () => {
  const panel = page.getByTestId('localai-run-settings');
  await panel.getByTestId('localai-logs-toggle').click();
  await agent.cli('install', 'echo-oci');
  await pushEcho('2.0.0');
  await releases.publish({ version: 'v3.5.0' });
  await panel.getByTestId('localai-check').click();
  await expect(panel.getByTestId('localai-upgrade')).toHaveText('Upgrade to v3.5.0');
  await panel.getByTestId('localai-upgrade').click();
  await expect(panel.getByTestId('localai-run-state')).toHaveText('LocalAI v3.5.0: stopped.');
  const marked = panel.getByTestId('localai-marked');
  await expect(marked).toContainText('since LocalAI v3.5.0');
  await expect(marked.getByRole('listitem')).toHaveText(['echo-oci (new build)']);
  expect(await seriousViolations(page)).toEqual([]);
  await marked.getByTestId('localai-upgrade-marked').click();
  await expect(marked).toBeHidden();
});

test('while the agent cannot be reached Upgrade all is off, saying why, and on again once it is back', async () => {
  const panel = page.getByTestId('localai-run-settings');
  await agent.cli('install', 'echo-oci');
  await pushEcho('3.0.0');
  await releases.publish({ version: 'v3.6.0' });
  await panel.getByTestId('localai-check').click();
  await panel.getByTestId('localai-upgrade').click();
  const upgradeAll = panel.getByTestId('localai-marked').getByTestId('localai-upgrade-marked');
  await expect(upgradeAll).toHaveAttribute('aria-disabled', 'false');
  await agent.stop();
  await expect(upgradeAll).toHaveAttribute('aria-disabled', 'true');
  await expect(upgradeAll).toHaveAttribute('title', /cannot be reached/);
  await agent.start();
  await expect(upgradeAll).toHaveAttribute('aria-disabled', 'false');
  await upgradeAll.click();
  await expect(panel.getByTestId('localai-marked')).toBeHidden();
});
