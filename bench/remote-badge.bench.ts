// remote_badge_ms: an out-of-band swap of a backend's directory on another node of the cluster → the red
// "stale cwd" badge painted (two animation frames after the DOM commit) in a page served by the first node and
// showing that other node. Real agents, a real nats-server, Debian's Chromium.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { trustingHomes } from '../electron/cluster/test-cluster.ts';
import { startNats } from '../electron/cluster/test-nats.ts';
import { startAgent, type RunningAgent } from '../e2e/fixtures/agent.ts';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../e2e/fixtures/chromium.ts';
import { copyStarterGallery } from '../e2e/fixtures/gallery.ts';
import { swapOutOfBand } from '../e2e/fixtures/swap.ts';
import { median, type BenchFigure } from './figure.ts';

const SWAPS = 5;
const BADGE = '[data-testid="process-m1"] [data-testid="stale-badge"]';

export default async function (): Promise<BenchFigure[]> {
  const root = await mkdtemp(join(tmpdir(), 'hangar-bench-remote-badge-'));
  const nats = await startNats();
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
  const agents: RunningAgent[] = [];
  try {
    await trustingHomes(['viewer', 'worker'].map((name) => join(root, name)));
    for (const name of ['viewer', 'worker']) {
      const gallery = await copyStarterGallery(join(root, `gallery-${name}`));
      agents.push(await startAgent({ home: join(root, name), gallery: gallery.index, args: ['--cluster', nats.url, '--name', name, '--heartbeat', '500'] }));
    }
    const [viewer, worker] = agents as [RunningAgent, RunningAgent];
    await worker.cli('install', 'echo');
    await worker.cli('load', 'echo', 'm1');
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(viewer.pageUrl);
    await page.getByTestId('node-worker').click();
    await page.locator('[data-testid="process-m1"]').waitFor({ timeout: 30_000 });
    const latencies: number[] = [];
    for (let i = 0; i < SWAPS; i++) {
      await page.locator(BADGE).waitFor({ state: 'detached', timeout: 30_000 });
      await page.evaluate((badge) => {
        const w = window as unknown as { __paintedAt: number | null };
        w.__paintedAt = null;
        const observer = new MutationObserver(() => {
          if (!document.querySelector(badge)) return;
          observer.disconnect();
          requestAnimationFrame(() => requestAnimationFrame(() => (w.__paintedAt = performance.timeOrigin + performance.now())));
        });
        observer.observe(document, { subtree: true, childList: true, attributes: true });
      }, BADGE);
      const swappedAt = await swapOutOfBand(join(worker.home, 'backends'), 'echo', `1.0.0-swap${i}`);
      await page.waitForFunction(() => (window as unknown as { __paintedAt: number | null }).__paintedAt !== null, undefined, { timeout: 30_000 });
      latencies.push((await page.evaluate(() => (window as unknown as { __paintedAt: number }).__paintedAt)) - swappedAt);
      await worker.cli('respawn', 'm1');
    }
    return [
      {
        name: 'remote_badge_ms',
        value: median(latencies),
        unit: 'ms',
        goal: 250,
        note: `an out-of-band swap on another node to the badge painted in the viewer's page, median of ${SWAPS}; max ${Math.max(...latencies).toFixed(0)} ms`,
      },
    ];
  } finally {
    await browser.close();
    for (const agent of agents) await agent.stop();
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  }
}
