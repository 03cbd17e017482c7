// A machine joins the cluster from the app (issue 42): the admin's Settings → Cluster make an invitation and show its
// one command, another agent's Settings join with it, and its next start is in the cluster; a used invitation is
// refused there in one line; revoked, the machine's page says so. Real agents on Debian's nats-server in operator
// mode, as `hangar cluster init` writes it.
import { expect, test, type Browser, type Page } from '@playwright/test';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { runNats, type NatsServer } from '../electron/cluster/test-nats.ts';
import { startAgent, type RunningAgent } from './fixtures/agent.ts';
import { collectErrors, shot } from './fixtures/page.ts';

test.describe.configure({ mode: 'serial' });

/** This file's own fixed ports, below the ephemeral range: the server, then each agent's backends. */
const NATS_URL = 'nats://127.0.0.1:28600';
const PORTS = { admin: '28610-28619', desk: '28620-28629', late: '28630-28639' };

let root: string;
let nats: NatsServer;
const agents: Partial<Record<keyof typeof PORTS, RunningAgent>> = {};
const pages: Page[] = [];
const pageErrors: string[] = [];
let command = '';

async function settingsOf(browser: Browser, agent: RunningAgent): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, permissions: ['clipboard-read', 'clipboard-write'] });
  const page = await context.newPage();
  pages.push(page);
  pageErrors.push(...collectErrors(page));
  await page.goto(agent.pageUrl);
  await page.getByTestId('nav-settings').click();
  return page;
}

test.beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'hangar-e2e-invite-'));
  const init = await promisify(execFile)(process.execPath, [resolve('dist/agent/cli.js'), '--home', join(root, 'admin'), 'cluster', 'init', '--url', NATS_URL, '--out', join(root, 'nats', 'nats.conf'), '--name', 'admin', '--json']);
  nats = await runNats(['-c', (JSON.parse(init.stdout) as { config: string }).config]);
  for (const machine of ['admin', 'desk', 'late'] as const) {
    agents[machine] = await startAgent({ home: join(root, machine), args: ['--ports', PORTS[machine], '--heartbeat', '500'] });
  }
});

test.afterAll(async () => {
  for (const page of pages) await page.context().close();
  for (const agent of Object.values(agents)) await agent.stop();
  await nats?.stop();
  await rm(root, { recursive: true, force: true });
});

test("the admin's Settings make an invitation: its one command, copied, and its expiry", async ({ browser }) => {
  const page = await settingsOf(browser, agents.admin!);
  const invite = page.getByRole('region', { name: 'Invite a machine' });
  await invite.getByTestId('invite-name').fill('gpu');
  await invite.getByTestId('invite-labels').fill('gpu=a100');
  await invite.getByTestId('invite-expires').selectOption({ label: '30 minutes' });
  await invite.getByTestId('invite-make').click();
  await expect(invite.getByTestId('invite-made')).toContainText('Run this on the machine to join as node gpu, before');
  command = (await invite.getByTestId('invite-command').textContent()) ?? '';
  expect(command).toMatch(/^HANGAR_JOIN_TOKEN=hjoin1\.\S+ hangar agent$/);
  await invite.getByTestId('invite-copy').click();
  await expect(invite.getByText('Copied.')).toBeVisible();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(command);
  await expect(page.getByRole('region', { name: 'Join with an invitation' }).getByTestId('join-state')).toContainText('as admin (node+viewer)');
  await invite.scrollIntoViewIfNeeded();
  await shot(page, 'settings-cluster-invite');
});

test("another agent's Settings join with the pasted command, and its next start is in the cluster", async ({ browser }) => {
  const page = await settingsOf(browser, agents.desk!);
  await expect(page.getByTestId('invite-not-admin')).toContainText('hangar cluster init');
  const join = page.getByRole('region', { name: 'Join with an invitation' });
  await join.getByTestId('join-token').fill(command);
  await join.getByTestId('join-submit').click();
  await expect(join.getByTestId('join-state')).toContainText('as gpu (node)');
  await expect(join.getByTestId('join-state')).toContainText('when it next starts');
  await shot(page, 'settings-cluster-joined');
  await agents.desk!.stop();
  await agents.desk!.start();
  await expect.poll(async () => {
    const cards = JSON.parse(await agents.admin!.cli('nodes', '--json')) as Array<{ name: string; status: string; labels: Record<string, string> }>;
    return cards.find((c) => c.name === 'gpu' && c.status === 'online')?.labels ?? null;
  }, { timeout: 20_000 }).toEqual({ gpu: 'a100' });
});

test('a used invitation is refused in one line, and the home stays out of the cluster', async ({ browser }) => {
  const page = await settingsOf(browser, agents.late!);
  const join = page.getByRole('region', { name: 'Join with an invitation' });
  await join.getByTestId('join-token').fill(command);
  await join.getByTestId('join-submit').click();
  await expect(join.getByTestId('join-error')).toContainText('this invitation was used already');
  await expect(join.getByTestId('join-error')).not.toContainText('hjoin1.');
  await expect(join.getByTestId('join-token')).toBeVisible();
  await join.scrollIntoViewIfNeeded();
  await shot(page, 'settings-cluster-refused');
  expect(pageErrors).toEqual([]);
});

test("a revoked machine's page says it was revoked: no link retried, no permission missing", async ({ browser }) => {
  await agents.admin!.cli('--home', join(root, 'admin'), 'cluster', 'revoke', 'gpu');
  const page = await settingsOf(browser, agents.desk!);
  const banner = page.getByTestId('cluster-banner');
  await expect(banner).toContainText('This machine was revoked from the cluster: the NATS server closed its connection');
  await expect(banner).toContainText('It stays usable on its own; a new invitation joins it again (hangar cluster invite, on an admin).');
  await expect(banner).not.toContainText('retrying');
  await expect(page.getByTestId('cluster-refused')).toHaveCount(0);
  await shot(page, 'cluster-revoked');
  expect(pageErrors).toEqual([]);
});
