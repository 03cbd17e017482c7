// An agent whose NATS user lacks a permission it needs (the configuration does not list it as a node): the server's
// refusal reaches the page as a banner that says what was refused and where to fix it.
import { expect, test } from '@playwright/test';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNats, type NatsServer } from '../electron/cluster/test-nats.ts';
import { startAgent, type RunningAgent } from './fixtures/agent.ts';
import { collectErrors, shot } from './fixtures/page.ts';

let root: string;
let nats: NatsServer;
let agent: RunningAgent;

test.beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'hangar-e2e-refused-'));
  const config = join(root, 'nats.conf');
  // A viewer's permissions, no node's: its heartbeats are refused.
  await writeFile(config, 'authorization { users = [ { user: "desk", password: "desk-password", permissions: { publish: { allow: [">"], deny: ["hangar.presence.>"] } } } ] }\n');
  nats = await startNats(['-c', config]);
  agent = await startAgent({
    home: join(root, 'home'),
    args: ['--cluster', nats.url, '--name', 'desk', '--cluster-user', 'desk', '--heartbeat', '500', '--ports', '26480-26489'],
    env: { HANGAR_CLUSTER_PASSWORD: 'desk-password' },
  });
});

test.afterAll(async () => {
  await agent?.stop();
  await nats?.stop();
  await rm(root, { recursive: true, force: true });
});

test('a permission the server refuses is shown on every view, with what was refused', async ({ page }) => {
  const errors = collectErrors(page);
  await page.goto(agent.pageUrl);
  const refused = page.getByTestId('cluster-refused');
  await expect(refused).toContainText(/^The NATS server refused this host: Permissions Violation for Publish to "hangar\.presence\.[0-9a-f]{16}"/);
  await expect(refused).toContainText('see hangar cluster nats-config');
  await page.getByTestId('nav-cluster').click();
  await expect(refused).toHaveCount(1);
  await shot(page, 'cluster-refused');
  expect(errors).toEqual([]);
});
