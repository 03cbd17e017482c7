// UI figures in Debian's Chromium against a real agent:
// - ui_patch_ms_500: with 500 installed backends listed, how long from a process event's arrival on the WebSocket to
//   the painted frame that shows it (median over real load/stop cycles). Baseline: the same with echo alone.
// - badge_latency_ms: an out-of-band swap of a backend dir → the red "stale cwd" badge painted (median).
// - ui_first_paint_ms: the URL opened → the Backends view painted with 500 backends (median of fresh pages).
// - dir_change_to_view_ms: a backend tree copied in (cp -a) or removed (rm -rf) by hand → the Backends view's count
//   painted (median of both ways), beside badge_latency_ms, the same path for a swap.
// "Painted" is two animation frames after the DOM commit: the first callback runs before the frame that holds the
// change is painted, the second once it has been.
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { startAgent } from '../e2e/fixtures/agent.ts';
import type { RunningAgent } from '../e2e/fixtures/agent.ts';
import { copyStarterGallery } from '../e2e/fixtures/gallery.ts';
import { swapOutOfBand } from '../e2e/fixtures/swap.ts';
import { median } from './figure.ts';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../e2e/fixtures/chromium.ts';
import type { BenchFigure } from './figure.ts';

const BACKENDS = 500;
const LOAD_CYCLES = 15;
const SWAPS = 5;
const FIRST_PAINTS = 5;
const DIR_CHANGES = 5;

/**
 * Injected before the app (test instrumentation, not part of the bundle): the first 'message' listener on every
 * WebSocket stamps process events, and a MutationObserver takes the next DOM commit as their rendering.
 */
function instrument() {
  const w = window as unknown as { __patchMs: number[] };
  w.__patchMs = [];
  let arrived: number | null = null;
  new MutationObserver(() => {
    if (arrived === null) return;
    const since = arrived;
    arrived = null;
    requestAnimationFrame(() => requestAnimationFrame(() => w.__patchMs.push(performance.now() - since)));
  }).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols);
      this.addEventListener('message', (message) => {
        if (typeof message.data === 'string' && message.data.includes('"type":"process"')) arrived = performance.now();
      });
    }
  };
}

async function openPage(browser: Browser, agent: RunningAgent, rows: number): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.addInitScript(instrument);
  await page.goto(agent.pageUrl);
  await page.getByText(`${rows} installed`).waitFor({ timeout: 60_000 });
  await page.getByTestId('backend-row-echo').waitFor();
  return page;
}

/**
 * URL opened to the Backends view painted with every row counted: from the navigation's start (the page's time
 * origin) to two animation frames after "N installed" first shows. A fresh page each time.
 */
async function firstPaints(browser: Browser, agent: RunningAgent, rows: number): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < FIRST_PAINTS; i++) {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.addInitScript((text: string) => {
      const w = window as unknown as { __paintedAt: number | null };
      w.__paintedAt = null;
      const observer = new MutationObserver(() => {
        if (!document.body?.textContent?.includes(text)) return;
        observer.disconnect();
        requestAnimationFrame(() => requestAnimationFrame(() => (w.__paintedAt = performance.now())));
      });
      observer.observe(document, { subtree: true, childList: true, characterData: true });
    }, `${rows} installed`);
    await page.goto(agent.pageUrl);
    await page.waitForFunction(() => (window as unknown as { __paintedAt: number | null }).__paintedAt !== null, undefined, { timeout: 60_000 });
    samples.push(await page.evaluate(() => (window as unknown as { __paintedAt: number }).__paintedAt));
    await page.close();
  }
  return samples;
}

/** Loads and stops a model from the CLI; every process event it causes is timed in the page. */
async function patchTimes(page: Page, agent: RunningAgent): Promise<number[]> {
  await page.evaluate(() => ((window as unknown as { __patchMs: number[] }).__patchMs = []));
  for (let i = 0; i < LOAD_CYCLES; i++) {
    await agent.cli('load', 'echo', 'bench');
    await page.getByTestId('process-bench').waitFor();
    await agent.cli('stop', 'bench');
    await page.getByTestId('process-bench').waitFor({ state: 'detached' });
  }
  return page.evaluate(() => (window as unknown as { __patchMs: number[] }).__patchMs);
}

async function badgeLatencies(page: Page, agent: RunningAgent): Promise<number[]> {
  await agent.cli('load', 'echo', 'm1');
  const latencies: number[] = [];
  for (let i = 0; i < SWAPS; i++) {
    const badge = page.locator('[data-testid="process-m1"] [data-testid="stale-badge"]');
    await badge.waitFor({ state: 'detached' });
    await page.evaluate(() => {
      const w = window as unknown as { __badgeAt: number | null };
      w.__badgeAt = null;
      const observer = new MutationObserver(() => {
        if (document.querySelector('[data-testid="process-m1"] [data-testid="stale-badge"]')) {
          observer.disconnect();
          requestAnimationFrame(() => requestAnimationFrame(() => (w.__badgeAt = performance.timeOrigin + performance.now())));
        }
      });
      observer.observe(document, { subtree: true, childList: true });
    });
    const swappedAt = await swapOutOfBand(join(agent.home, 'backends'), 'echo', `1.0.0-swap${i}`);
    await badge.waitFor({ timeout: 30_000 });
    await page.waitForFunction(() => (window as unknown as { __badgeAt: number | null }).__badgeAt !== null);
    const shownAt = await page.evaluate(() => (window as unknown as { __badgeAt: number | null }).__badgeAt);
    latencies.push(shownAt! - swappedAt);
    await agent.cli('respawn', 'm1');
  }
  return latencies;
}

/** In the page: stamps (epoch ms) the frame painted after `text` first shows. */
function stampWhenShown(text: string): void {
  const w = window as unknown as { __shownAt: number | null };
  w.__shownAt = null;
  const observer = new MutationObserver(() => {
    if (!document.body.textContent?.includes(text)) return;
    observer.disconnect();
    requestAnimationFrame(() => requestAnimationFrame(() => (w.__shownAt = performance.timeOrigin + performance.now())));
  });
  observer.observe(document, { subtree: true, childList: true, characterData: true });
}

/** A stub tree copied in, then removed, out of band: each change to the count painted. */
async function dirChangeLatencies(page: Page, agent: RunningAgent): Promise<number[]> {
  const backendsDir = join(agent.home, 'backends');
  const copy = join(backendsDir, 'copied');
  const changes = [
    { rows: BACKENDS + 1, make: () => cp(join(backendsDir, 'stub-000'), copy, { recursive: true, preserveTimestamps: true }) },
    { rows: BACKENDS, make: () => rm(copy, { recursive: true }) },
  ];
  const latencies: number[] = [];
  for (let i = 0; i < DIR_CHANGES; i++) {
    for (const change of changes) {
      await page.evaluate(stampWhenShown, `${change.rows} installed`);
      const madeAt = performance.timeOrigin + performance.now();
      await change.make();
      await page.waitForFunction(() => (window as unknown as { __shownAt: number | null }).__shownAt !== null, undefined, { timeout: 30_000 });
      latencies.push((await page.evaluate(() => (window as unknown as { __shownAt: number }).__shownAt)) - madeAt);
    }
  }
  return latencies;
}

/** 499 minimal backend dirs (run.sh + metadata.json) beside an installed echo. */
async function addStubBackends(backendsDir: string, count: number): Promise<void> {
  const echoMeta = JSON.parse(await readFile(join(backendsDir, 'echo', 'metadata.json'), 'utf8')) as Record<string, unknown>;
  for (let i = 0; i < count; i++) {
    const name = `stub-${String(i).padStart(3, '0')}`;
    const dir = join(backendsDir, name);
    await mkdir(dir);
    await writeFile(join(dir, 'run.sh'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
    await writeFile(join(dir, 'metadata.json'), JSON.stringify({ ...echoMeta, name, alias: undefined }, null, 2));
  }
}

export default async function (): Promise<BenchFigure[]> {
  const root = await mkdtemp(join(tmpdir(), 'hangar-ui-bench-'));
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
  let agent: RunningAgent | null = null;
  try {
    const gallery = await copyStarterGallery(join(root, 'gallery'));
    const home = join(root, 'home');
    agent = await startAgent({ home, gallery: gallery.index });
    await agent.cli('install', 'echo');

    const single = await openPage(browser, agent, 1);
    const baseline = await patchTimes(single, agent);
    await single.close();
    await agent.stop();

    await addStubBackends(join(home, 'backends'), BACKENDS - 1);
    agent = await startAgent({ home, gallery: gallery.index });
    const paints = await firstPaints(browser, agent, BACKENDS);
    const page = await openPage(browser, agent, BACKENDS);
    const subject = await patchTimes(page, agent);
    const badges = await badgeLatencies(page, agent);
    const dirChanges = await dirChangeLatencies(page, agent);

    return [
      {
        name: 'ui_first_paint_ms',
        value: median(paints),
        unit: 'ms',
        goal: 1000,
        note: `URL opened -> the Backends view painted with ${BACKENDS} backends counted, fresh page, median of ${FIRST_PAINTS}`,
      },
      {
        name: 'ui_patch_ms_500',
        value: median(subject),
        unit: 'ms',
        goal: 50,
        note: `to the painted frame; ${subject.length} process events, max ${Math.max(...subject).toFixed(1)} ms; baseline with echo alone: ${median(baseline).toFixed(1)} ms`,
      },
      {
        name: 'badge_latency_ms',
        value: median(badges),
        unit: 'ms',
        goal: 50,
        note: `to the painted frame; ${SWAPS} out-of-band swaps with ${BACKENDS} backends listed; max ${Math.max(...badges).toFixed(0)} ms`,
      },
      {
        name: 'dir_change_to_view_ms',
        value: median(dirChanges),
        unit: 'ms',
        goal: 250,
        note: `cp -a or rm -rf of a backend tree by hand -> the count painted; ${dirChanges.length} changes with ${BACKENDS} backends listed; max ${Math.max(...dirChanges).toFixed(0)} ms; badge_latency_ms beside it`,
      },
    ];
  } finally {
    await browser.close();
    await agent?.stop();
    await rm(root, { recursive: true, force: true });
  }
}
