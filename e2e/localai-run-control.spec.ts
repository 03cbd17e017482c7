// Settings → LocalAI as a user drives it through what takes long and what goes wrong, with a real agent on the
// stand-in's releases: a long first start stopped from the panel, a download cancelled from it, a refused release said
// once and gone once something else is done, the LocalAI server part following the LocalAI Hangar runs, and its models
// once it stopped.
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { StandInReleases } from '../electron/localai/testing/standin-releases.ts';
import type { RunningAgent } from './fixtures/agent.ts';
import { openLocalAiSession, type LocalAiSession } from './fixtures/localai-session.ts';
import { seriousViolations } from './fixtures/page.ts';

test.describe.configure({ mode: 'serial' });

let session: LocalAiSession;
let agent: RunningAgent;
let page: Page;
let releases: StandInReleases;

test.beforeAll(async ({ browser }) => {
  // A first start that fetches what it needs: far longer than any test waits.
  session = await openLocalAiSession(browser, 'e2e-localai-control', [{ version: 'v3.2.0', readyAfterMs: 600_000 }]);
  ({ agent, page, releases } = session);
  await agent.cli('localai', 'install');
  await page.goto(agent.pageUrl);
  await page.getByTestId('nav-settings').click();
});

test.afterAll(async () => {
  await session?.close();
});

test('Stop acts during a long start, by keyboard too, and the cancelled start is no failure', async () => {
  const panel = page.getByTestId('localai-run-settings');
  const state = panel.getByTestId('localai-run-state');
  await panel.getByTestId('localai-start').click();
  await expect(state).toHaveText(/^LocalAI v3\.2\.0: starting \(pid \d+\)/);
  await expect(panel.getByTestId('localai-check')).toHaveAttribute('aria-disabled', 'false');
  const stop = panel.getByTestId('localai-stop');
  await expect(stop).toBeEnabled();
  await expect(stop).toHaveAttribute('aria-disabled', 'false');
  await stop.focus();
  await page.keyboard.press('Enter');
  await expect(state).toHaveText('LocalAI v3.2.0: stopped.');
  // The start it cancelled is no failure: the user asked for it.
  await expect(panel.getByTestId('localai-run-error')).toHaveCount(0);
});

test('a download is cancelled from the panel, and LocalAI stays as it was', async () => {
  const panel = page.getByTestId('localai-run-settings');
  await releases.publish({ version: 'v3.3.0' });
  releases.hold('v3.3.0');
  await panel.getByTestId('localai-check').click();
  await panel.getByTestId('localai-upgrade').click();
  await expect.poll(() => releases.stalledDownloads()).toBe(1);
  await expect(panel.getByTestId('localai-start')).toHaveAttribute('title', /^A LocalAI upgrade is under way \(downloading LocalAI v3\.3\.0: 50%\)$/);
  expect(await seriousViolations(page)).toEqual([]);
  await panel.getByTestId('localai-cancel').click();
  await expect(panel.getByTestId('localai-run-operation')).toHaveText('Last upgrade: cancelled the LocalAI upgrade to v3.3.0: LocalAI v3.2.0 stays as it was');
  await expect(panel.getByTestId('localai-cancel')).toHaveCount(0);
  await expect(panel.getByTestId('localai-run-error')).toHaveCount(0);
  await expect(panel.getByTestId('localai-run-state')).toHaveText('LocalAI v3.2.0: stopped.');
  releases.letGo();
});

test('a refused release is said once, and not after LocalAI was upgraded and started since', async () => {
  const panel = page.getByTestId('localai-run-settings');
  await releases.publish({ version: 'v3.4.0' }, 'wrong');
  await panel.getByTestId('localai-check').click();
  await expect(panel.getByTestId('localai-upgrade')).toHaveText('Upgrade to v3.4.0');
  await panel.getByTestId('localai-upgrade').click();
  await expect(panel.getByTestId('localai-run-operation')).toContainText('Last upgrade: refused LocalAI v3.4.0: its sha256 is not the one its checksums file lists');
  await expect(panel.getByText(/refused LocalAI v3\.4\.0/)).toHaveCount(1);
  await expect(panel.getByTestId('localai-run-error')).toHaveCount(0);
  await agent.cli('localai', 'upgrade', 'v3.3.0');
  await panel.getByTestId('localai-start').click();
  await expect(panel.getByTestId('localai-run-state')).toHaveText(/^LocalAI v3\.3\.0: ready/);
  await expect(panel.getByText(/refused LocalAI v3\.4\.0/)).toHaveCount(0);
});

test('a refused release is not offered again until another is the latest, unless the user tries it again', async () => {
  const panel = page.getByTestId('localai-run-settings');
  const refused = panel.getByTestId('localai-refused');
  // Since refused, LocalAI was upgraded and started: the refusal is said here, not as the last operation's.
  await expect(refused).toHaveText(/^Not offered again: v3\.4\.0, the latest release, was refused at \d\d:\d\d:\d\d: its sha256 is not the one its checksums file lists; nothing was installed \(local-ai-v3\.4\.0-/);
  await expect(panel.getByTestId('localai-upgrade')).toHaveCount(0);
  await panel.getByTestId('localai-check').click();
  await expect(panel.getByTestId('localai-check')).toHaveAttribute('aria-disabled', 'false');
  await expect(panel.getByTestId('localai-upgrade')).toHaveCount(0);
  await panel.getByTestId('localai-retry').click();
  await expect(panel.getByTestId('localai-run-operation')).toContainText('Last upgrade: refused LocalAI v3.4.0: its sha256 is not the one its checksums file lists');
  await expect(refused).toHaveText(/^Not offered again: v3\.4\.0, the latest release, was refused at \d\d:\d\d:\d\d, as said below\.$/);
  await releases.publish({ version: 'v3.5.0' });
  await panel.getByTestId('localai-check').click();
  await expect(panel.getByTestId('localai-upgrade')).toHaveText('Upgrade to v3.5.0');
  await expect(refused).toHaveCount(0);
  await expect(panel.getByTestId('localai-retry')).toHaveCount(0);
});

test("while the agent cannot be reached LocalAI's state is unknown, and live again once it is back", async () => {
  const panel = page.getByTestId('localai-run-settings');
  const state = panel.getByTestId('localai-run-state');
  await expect(state).toHaveText(/^LocalAI v3\.3\.0: ready \(pid \d+\)/);
  await agent.stop();
  await expect(state).toHaveText(/^LocalAI v3\.3\.0: state unknown since the connection to the agent was lost at \d\d:\d\d:\d\d\.$/);
  await expect(panel).not.toContainText(/ready|pid/);
  await expect(panel.getByTestId('localai-stop')).toHaveAttribute('aria-disabled', 'true');
  // The agent stopped LocalAI as it stopped: the panel says so once it is back, not what it read before.
  await agent.start();
  await expect(state).toHaveText('LocalAI v3.3.0: stopped.');
  await panel.getByTestId('localai-start').click();
  await expect(state).toHaveText(/^LocalAI v3\.3\.0: ready/);
});

test("while the agent cannot be reached the LocalAI server's link is unknown and Show logs is off; live again once it is back", async () => {
  const server = page.getByTestId('localai-server-state');
  const logs = page.getByTestId('localai-logs-toggle');
  await expect(server).toHaveText(/^Linked to LocalAI v3\.3\.0/);
  await agent.stop();
  await expect(server).toHaveText(/^Link to http:\/\/127\.0\.0\.1:\d+ unknown since the connection to the agent was lost at \d\d:\d\d:\d\d\.$/);
  await expect(logs).toHaveAttribute('aria-disabled', 'true');
  await expect(logs).toHaveAttribute('title', /cannot be reached/);
  for (const button of [page.getByTestId('localai-server-save'), page.getByTestId('localai-server-forget')]) await expect(button).toHaveAttribute('title', /cannot be reached/);
  await logs.click({ force: true });
  await expect(page.getByTestId('localai-logs')).toHaveCount(0);
  await agent.start();
  // The agent stopped LocalAI as it stopped: a fresh read says so.
  await expect(server).toHaveText(/^Not linked to http:\/\/127\.0\.0\.1:\d+: /);
  await expect(logs).toHaveAttribute('aria-disabled', 'false');
  await page.getByTestId('localai-start').click();
  await expect(server).toHaveText(/^Linked to LocalAI v3\.3\.0/);
});

test('Settings → LocalAI server follows the LocalAI Hangar runs, with no reload', async () => {
  const server = page.getByTestId('localai-server-state');
  await expect(server).toHaveText(/^Linked to LocalAI v3\.3\.0 \(\w+\) at http:\/\/127\.0\.0\.1:\d+: 0 models loaded\.$/);
  await page.getByTestId('localai-stop').click();
  await expect(server).toHaveText(/^Not linked to http:\/\/127\.0\.0\.1:\d+: .*connection refused/);
});

test("LocalAI's models once it stopped show no pid or port, as `hangar ps` does", async () => {
  const panel = page.getByTestId('localai-run-settings');
  await agent.cli('install', 'echo');
  await mkdir(join(agent.home, 'models'), { recursive: true });
  await writeFile(join(agent.home, 'models', 'm1.yaml'), 'name: m1\nbackend: echo\n');
  await panel.getByTestId('localai-start').click();
  await expect(panel.getByTestId('localai-run-state')).toHaveText(/^LocalAI v3\.3\.0: ready/);
  const { url } = JSON.parse(await agent.cli('localai', 'status', '--json')) as { url: string };
  const key = (await readFile(join(agent.home, 'state', 'localai-api-key'), 'utf8')).trim();
  const load = await fetch(`${url}/backend/load`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm1' }) });
  expect(load.status).toBe(200);
  await page.getByTestId('nav-processes').click();
  const row = page.getByTestId('supervised-m1');
  await expect(row).toHaveAttribute('data-state', 'ready');
  await page.getByTestId('nav-settings').click();
  await panel.getByTestId('localai-stop').click();
  await expect(panel.getByTestId('localai-run-state')).toHaveText('LocalAI v3.3.0: stopped.');
  await page.getByTestId('nav-processes').click();
  await expect(row).toHaveAttribute('data-state', 'exited');
  await expect(row.getByTestId('supervised-pid')).toHaveText('—');
  await expect(row.getByTestId('supervised-port')).toHaveText('—');
});

test('a model of a stopped LocalAI offers no Restart that cannot work: it says so, and leads to starting LocalAI', async () => {
  const row = page.getByTestId('supervised-m1');
  // Restart for its ended row, Respawn where a process of it is still seen: neither can reach LocalAI, nor can Remove.
  for (const action of [row.getByRole('button', { name: /^(Restart|Respawn)$/ }), row.getByTestId('process-stop')]) {
    await expect(action).toHaveAttribute('aria-disabled', 'true');
    await expect(action).toHaveAttribute('title', /^LocalAI is not running \(since \d\d:\d\d:\d\d UTC\): start LocalAI first \(Settings → LocalAI\)$/);
  }
  await expect(page.getByTestId('localai-down')).toContainText(/^LocalAI is not running \(since \d\d:\d\d:\d\d UTC\): nothing can be done to its models until it runs again\./);
  expect(await seriousViolations(page)).toEqual([]);
  await page.getByTestId('localai-down-settings').click();
  const panel = page.getByTestId('localai-run-settings');
  await expect(panel).toBeInViewport();
  await panel.getByTestId('localai-start').click();
  await expect(panel.getByTestId('localai-run-state')).toHaveText(/^LocalAI v3\.3\.0: ready/);
});
