// Every view as an operator of a small cluster sees it, on three real agents and a real nats-server: a rollout that
// halted at a node that failed with a long reason, a node offline with an upgrade waiting, a stale and a crashed
// process, a process Hangar did not start, a backend two galleries list. Each view, light and dark, 1280 and 900 px
// wide, is screenshot, checked with axe, and checked for pills that clip or break their text.
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trustingHomes } from '../electron/cluster/test-cluster.ts';
import { startNats, type NatsServer } from '../electron/cluster/test-nats.ts';
import { startAgent, type RunningAgent } from './fixtures/agent.ts';
import { copyStarterGallery, type TestGallery } from './fixtures/gallery.ts';
import { collectErrors, docShot, seriousViolations, shot } from './fixtures/page.ts';
import { swapOutOfBand } from './fixtures/swap.ts';

test.describe.configure({ mode: 'serial' });

const VIEWS = ['cluster', 'backends', 'gallery', 'processes', 'settings', 'notifications'] as const;
type ViewName = (typeof VIEWS)[number];
/** Short states shown as pills: each must show its whole text on one line. */
const PILLS = '.badge, .pill, .tag, .nav-count, .link-word';

let root: string;
let nats: NatsServer;
const agents: RunningAgent[] = [];
const galleries: TestGallery[] = [];
let stranger: ChildProcess | undefined;
let page: Page;
let pageErrors: string[];

test.beforeAll(async ({ browser }) => {
  root = await mkdtemp(join(tmpdir(), 'hangar-e2e-views-'));
  nats = await startNats();
  await trustingHomes([1, 2, 3].map((i) => join(root, `home-${i}`)));
  const team = await copyStarterGallery(join(root, 'team'));
  await team.setVersion('echo', '1.2.0');
  for (const i of [1, 2, 3]) {
    const gallery = await copyStarterGallery(join(root, `gallery-${i}`));
    galleries.push(gallery);
    const args = ['--cluster', nats.url, '--name', `n${i}`, '--heartbeat', '500', '--ports', `238${i}0-238${i}9`];
    // n1 also reads a second gallery that lists echo too: one card, two sources.
    if (i === 1) args.push('--gallery', `team=${team.index}`);
    agents.push(await startAgent({ home: join(root, `home-${i}`), gallery: `starter=${gallery.index}`, args }));
  }
  const [n1, n2, n3] = agents as [RunningAgent, RunningAgent, RunningAgent];
  for (const agent of agents) await agent.cli('install', 'echo');
  await n1.cli('load', 'echo', 'chat');
  await n2.cli('load', 'echo', 'embed');

  // 1.1.0 everywhere; on n2 its entry asks for a checksum its folder cannot have, so n2's upgrade fails.
  for (const gallery of galleries) await gallery.setVersion('echo', '1.1.0');
  await galleries[1]!.updateEntry('echo', { sha256: 'a'.repeat(64) });
  await expect.poll(async () => JSON.parse(await n1.cli('ls', '--on', 'all', '--json')).every((c: { backends: { upgradable: boolean }[] }) => c.backends[0]?.upgradable)).toBe(true);
  await n1.cli('upgrade', 'echo', '--on', 'all').catch(() => undefined); // halts at n2: exits 1

  const crashed = JSON.parse(await n1.cli('load', 'echo', 'summarize', '--restart', 'never', '--json')) as { pid: number };
  process.kill(crashed.pid, 'SIGKILL');
  const backendsDir = join(n1.home, 'backends');
  stranger = spawn('sleep', ['300'], { cwd: join(backendsDir, 'echo'), stdio: 'ignore' });
  await swapOutOfBand(backendsDir, 'echo', '1.1.0-patched');
  // Whatever the rollout did on n3, an upgrade waits there when it goes offline.
  await galleries[2]!.setVersion('echo', '1.1.1');
  await expect.poll(async () => JSON.parse(await n3.cli('ls', '--json'))[0].upgradable).toBe(true);
  await n3.stop();

  // Its own context, as axe's Playwright builder requires.
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  pageErrors = collectErrors(page);
  await page.goto(n1.pageUrl);
  await expect(page.getByTestId('node-n3').getByLabel('offline')).toBeVisible({ timeout: 30_000 });
});

test.afterAll(async () => {
  stranger?.kill('SIGKILL');
  await page?.context().close();
  for (const agent of agents) await agent.stop();
  await nats?.stop();
  await rm(root, { recursive: true, force: true });
});

async function show(view: ViewName) {
  if (view === 'cluster') await page.getByTestId('nav-cluster').click();
  else {
    if (view !== 'notifications') await page.getByTestId('node-n1').click();
    await page.getByTestId(`nav-${view}`).click();
  }
  await expect(page.locator('main h1')).toBeVisible();
  if (view === 'cluster') await expect(page.getByTestId('matrix-echo').getByTestId('rollout-step').first()).toBeVisible();
  if (view === 'processes') await expect(page.getByTestId('processes-count')).toBeVisible();
  if (view === 'settings') await page.getByTestId('cluster-state').scrollIntoViewIfNeeded();
  if (view === 'gallery') await expect(page.getByTestId('gallery-entry-echo')).toBeVisible();
  await page.mouse.move(0, 0);
}

/** Pills whose text is cut off or broken over lines, as "text: why". */
async function brokenPills(): Promise<string[]> {
  return page.locator(PILLS).evaluateAll((pills) =>
    pills
      .filter((pill) => pill.getClientRects().length > 0)
      .flatMap((pill) => {
        const text = pill.textContent?.trim() ?? '';
        const style = getComputedStyle(pill);
        if (style.display === 'inline') return [`${text}: displayed inline, so its width cannot be checked`];
        const range = document.createRange();
        range.selectNodeContents(pill);
        const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
        const problems = [
          pill.scrollWidth > pill.clientWidth + 1 ? `clipped (${pill.scrollWidth} px of text in ${pill.clientWidth} px)` : null,
          lines > 1 ? `broken over ${lines} lines` : null,
        ];
        return problems.filter(Boolean).map((p) => `${text}: ${p}`);
      }),
  );
}

test("a rollout that halted, and the node's failure, are in Notifications; the reason sits beneath its cell, out of the pill", async () => {
  await show('notifications');
  const notices = page.getByTestId('notifications');
  await expect(notices).toContainText('Rollout of echo halted: n2 failed: ');
  await expect(notices).toContainText('n2: upgrade echo failed: ');
  await show('cluster');
  const n2 = page.getByTestId('matrix-echo').locator('td').nth(1);
  await expect(n2.getByTestId('rollout-step')).toHaveText('failed');
  await expect(n2.getByTestId('rollout-reason')).toContainText('is a directory and cannot be verified');
});

for (const width of [1280, 900]) {
  for (const scheme of ['light', 'dark'] as const) {
    test(`every view at ${width} px, ${scheme}: no pill clips or breaks its text, axe finds nothing serious, nothing scrolls sideways`, async () => {
      await page.setViewportSize({ width, height: 800 });
      await page.emulateMedia({ colorScheme: scheme });
      for (const view of VIEWS) {
        await show(view);
        const name = `views-${view}-${scheme}-${width}`;
        if (view === 'cluster' && scheme === 'light' && width === 1280) await docShot(page, 'screenshot-cluster');
        else await shot(page, name);
        expect.soft(await brokenPills(), `pills in the ${view} view`).toEqual([]);
        expect.soft(await seriousViolations(page), `axe in the ${view} view`).toEqual([]);
        expect.soft(await page.evaluate(() => document.documentElement.scrollWidth), `the ${view} view's width`).toBeLessThanOrEqual(width);
      }
    });
  }
}

test('the page ran without uncaught errors', () => {
  expect(pageErrors.filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
});
