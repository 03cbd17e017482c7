// The Processes view against a real agent: a process Hangar did not start, left running in a backend directory that
// an out-of-band reinstall replaced, shows up on Scan with the red stale cwd badge.
import { expect, test } from '@playwright/test';
import type { Locator, Page } from '@playwright/test';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { ChildProcess } from 'node:child_process';
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunningAgent } from './fixtures/agent.ts';
import { shot } from './fixtures/page.ts';
import { openSession, type Session } from './fixtures/session.ts';
import { swapOutOfBand } from './fixtures/swap.ts';

test.describe.configure({ mode: 'serial' });

let session: Session;
let agent: RunningAgent;
let page: Page;
let pageErrors: string[];

test.beforeAll(async ({ browser }) => {
  session = await openSession(browser, 'e2e-processes');
  ({ agent, page, pageErrors } = session);
});

test.afterAll(async () => {
  await session?.close();
});

test('opening Processes scans at once and says when nothing runs from the backends directory', async () => {
  await page.goto(agent.pageUrl);
  await page.getByTestId('nav-processes').click();
  await expect(page.getByTestId('processes-empty')).toHaveText(/No process runs from the backends directory\./);
});

test('Scan shows an unsupervised process left in a swapped-out directory with a red stale cwd badge', async () => {
  await agent.cli('install', 'echo');
  const backendsDir = join(agent.home, 'backends');
  const sleeper: ChildProcess = spawn('sleep', ['60'], { cwd: join(backendsDir, 'echo'), stdio: 'ignore' });
  try {
    const pid = sleeper.pid!;
    await swapOutOfBand(backendsDir, 'echo', '1.0.0-swapped');

    await page.getByTestId('nav-backends').click();
    await page.getByTestId('nav-processes').click();
    const scan = page.getByTestId('processes-scan');
    await scan.click();
    const row = page.getByTestId(`scan-row-${pid}`);
    await expect(row).toBeVisible();
    await expect(scan).toBeEnabled();

    await expect(row.getByTestId('scan-pid')).toHaveText(String(pid));
    await expect(row.getByTestId('stale-badge')).toHaveText('stale cwd');
    await expect(row.getByTestId('scan-supervised')).toHaveText('not started by Hangar');
    await expect(row.getByTestId('scan-cwd')).toHaveText(/echo\.install-backup \(deleted\)$/);
    await expect(row).toContainText('sleep 60');
    await expect(row.getByTestId('scan-backend')).toHaveText('echo');
    const [r, g, b] = (await row.getByTestId('stale-badge').evaluate((el) => getComputedStyle(el).backgroundColor))
      .match(/\d+/g)!
      .map(Number);
    expect(r! > 180 && g! < 100 && b! < 100, `the badge is red, not rgb(${r}, ${g}, ${b})`).toBe(true);
    await page.mouse.move(0, 0);
    await shot(page, '09-processes');

    await row.getByTestId('stale-badge').focus();
    const tooltip = row.getByTestId('stale-tooltip');
    await expect(tooltip).toBeVisible();
    await expect(tooltip).toContainText('Hangar did not start it');
    await shot(page, '09-processes-tooltip');
    await row.getByTestId('stale-badge').blur();

    await page.emulateMedia({ colorScheme: 'dark' });
    await shot(page, '09-processes-dark');
    await page.emulateMedia({ colorScheme: 'light' });
  } finally {
    sleeper.kill('SIGKILL');
  }
});

test('Stop process asks, naming the PID and command line, and stops only that process', async () => {
  const backendsDir = join(agent.home, 'backends');
  const sleeper: ChildProcess = spawn('sleep', ['61'], { cwd: join(backendsDir, 'echo'), stdio: 'ignore' });
  const exited = once(sleeper, 'exit');
  try {
    const pid = sleeper.pid!;
    await swapOutOfBand(backendsDir, 'echo', '1.0.0-swapped-again');
    await page.getByTestId('processes-scan').click();
    const row = page.getByTestId(`scan-row-${pid}`);
    await expect(row.getByTestId('stale-badge')).toBeVisible();

    await row.getByTestId('scan-stop').click();
    const dialog = page.getByRole('dialog', { name: `Stop process ${pid}?` });
    await expect(dialog).toBeVisible();
    await expect(dialog).toContainText(`PID ${pid}`);
    await expect(dialog).toContainText('sleep 61');
    await shot(page, '09-processes-stop');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await expect(dialog).toBeHidden();
    await expect(row.getByTestId('scan-stop'), 'Cancel gives focus back to the button that asked').toBeFocused();
    expect(sleeper.exitCode ?? sleeper.signalCode, 'Cancel leaves it running').toBeNull();

    await row.getByTestId('scan-stop').click();
    await dialog.getByRole('button', { name: 'Stop process' }).click();
    await exited;
    expect(sleeper.signalCode).toBe('SIGTERM');
    await expect(row).toBeHidden();
  } finally {
    sleeper.kill('SIGKILL');
  }
});

test("a supervised backend's child is Hangar's, and a move of its directory shows in Working directory without a new Scan", async () => {
  const dir = join(agent.home, 'backends', 'echo');
  // run.sh leaves a sleep behind, its own child, as some backends' scripts do.
  await rename(join(dir, 'run.sh'), join(dir, 'real-run.sh'));
  await writeFile(join(dir, 'run.sh'), '#!/bin/sh\nsleep 62 &\nexec "$(dirname "$0")/real-run.sh" "$@"\n', { mode: 0o755 });
  await agent.cli('load', 'echo', 'm1');
  try {
    const pid = ((await agent.ps()) as Array<{ model: string; pid: number }>).find((p) => p.model === 'm1')!.pid;
    await page.getByTestId('processes-scan').click();
    const leader = page.getByTestId(`scan-row-${pid}`);
    const child = page.locator('tr[data-testid^="scan-row-"]', { hasText: 'sleep 62' });
    await expect(leader.getByTestId('scan-cwd')).toHaveText(dir);
    await expect(child.getByTestId('scan-supervised')).toHaveText('yes');
    await expect(child.getByTestId('scan-backend')).toHaveText('echo');

    // Out of band, nothing clicked: the rows follow the processes' cwd, and both are stale.
    await rename(dir, `${dir}.old`);
    await expect(leader.getByTestId('scan-cwd')).toHaveText(`${dir}.old`);
    await expect(child.getByTestId('scan-cwd')).toHaveText(`${dir}.old`);
    await expect(child.getByTestId('stale-badge')).toBeVisible();
  } finally {
    await rename(`${dir}.old`, dir).catch(() => undefined);
    await agent.cli('stop', 'm1');
    await rename(join(dir, 'real-run.sh'), join(dir, 'run.sh'));
  }
});

test('the Scan button works from the keyboard and drops a process that has exited', async () => {
  // The last item of the sidebar's views; the page's first control comes next in tab order.
  await page.getByTestId('nav-settings').focus();
  await page.keyboard.press('Tab');
  await expect(page.getByTestId('processes-scan')).toBeFocused();
  await shot(page, '09-processes-focus');
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('processes-empty')).toBeVisible();
});

/** Whether two boxes do not overlap: side by side, or one above the other. */
function apart(a: { x: number; y: number; width: number; height: number }, b: { x: number; y: number; width: number; height: number }): boolean {
  return a.x + a.width <= b.x || b.x + b.width <= a.x || a.y + a.height <= b.y || b.y + b.height <= a.y;
}

/**
 * A supervised model and a process Hangar did not start, both stale, each a row in its table: `check` is given the
 * two rows; then the model is stopped and the process killed.
 */
async function withStaleRows(model: string, check: (supervised: Locator, scanned: Locator) => Promise<void>): Promise<void> {
  const backendsDir = join(agent.home, 'backends');
  await agent.cli('load', 'echo', model);
  // A respawn leaves a note under the model's name, which widens the column that stays in view at the left.
  await agent.cli('respawn', model);
  const sleeper: ChildProcess = spawn('sleep', ['63'], { cwd: join(backendsDir, 'echo'), stdio: 'ignore' });
  try {
    await swapOutOfBand(backendsDir, 'echo', `1.0.0-${model}`);
    await page.getByTestId('processes-scan').click();
    const supervised = page.getByTestId(`supervised-${model}`);
    const scanned = page.getByTestId(`scan-row-${sleeper.pid}`);
    await expect(supervised.getByTestId('stale-badge')).toBeVisible();
    await expect(scanned.getByTestId('stale-badge')).toBeVisible();
    await check(supervised, scanned);
  } finally {
    await page.setViewportSize({ width: 1280, height: 860 });
    sleeper.kill('SIGKILL');
    await agent.cli('stop', model);
  }
}

test('at 900 and 700 px a stale row shows its state beside the actions that stay in view, not under them', async () => {
  await withStaleRows('m2', async (supervised, scanned) => {
    for (const width of [900, 700]) {
      await page.setViewportSize({ width, height: 800 });
      await page.mouse.move(0, 0);
      await shot(page, `09-processes-${width}`);
      for (const row of [supervised, scanned]) {
        const badge = row.getByTestId('stale-badge');
        const state = (await row.locator('td', { has: page.getByTestId('stale-badge') }).boundingBox())!;
        const actions = (await row.locator('td.sticky-end').boundingBox())!;
        expect(apart(state, actions), `at ${width} px the state cell (${JSON.stringify(state)}) is clear of the actions (${JSON.stringify(actions)})`).toBe(true);
        const shown = await badge.evaluate((el) => {
          const box = el.getBoundingClientRect();
          return [box.left + 1, box.left + box.width / 2, box.right - 1].every((x) => el.contains(document.elementFromPoint(x, box.top + box.height / 2)));
        });
        expect(shown, `at ${width} px nothing covers the stale badge`).toBe(true);
      }
    }
  });
});

test('at 1280 px no column of either table lies under the actions that stay in view', async () => {
  await withStaleRows('m4', async (supervised, scanned) => {
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.mouse.move(0, 0);
    await shot(page, '09-processes-1280');
    for (const row of [supervised, scanned]) {
      const actions = (await row.locator('td.sticky-end').boundingBox())!;
      for (const cell of await row.locator('td:not(.sticky-end), th').all()) {
        const box = (await cell.boundingBox())!;
        expect(apart(box, actions), `"${(await cell.innerText()).trim()}" (${JSON.stringify(box)}) is clear of the actions (${JSON.stringify(actions)})`).toBe(true);
      }
    }
  });
});

test("a stale badge's tooltip shows its whole text, in either table, at 1280 and 700 px", async () => {
  await withStaleRows('m3', async (supervised, scanned) => {
    for (const width of [1280, 700]) {
      await page.setViewportSize({ width, height: 800 });
      for (const [table, row] of [['supervised', supervised], ['scan', scanned]] as const) {
        const badge = row.getByTestId('stale-badge');
        await badge.focus();
        const tooltip = row.getByTestId('stale-tooltip');
        await expect(tooltip).toBeVisible();
        await expect(tooltip).toContainText('/proc says');
        await shot(page, `09-processes-tooltip-${table}-${width}`);
        const hidden = await tooltip.evaluate((tip) => {
          const box = tip.getBoundingClientRect();
          return [...tip.querySelectorAll<HTMLElement>('.tooltip-title, dt, dd, :scope > .muted')].flatMap((part) => {
            const r = part.getBoundingClientRect();
            const corners = [r.left + 2, r.right - 2].flatMap((x) => [r.top + 2, r.bottom - 2].map((y) => document.elementFromPoint(x, y)));
            const problems = [
              r.left < box.left || r.right > box.right ? 'runs out of the tooltip' : null,
              part.scrollWidth > part.clientWidth + 1 ? 'its text overflows' : null,
              corners.every((at) => at !== null && tip.contains(at)) ? null : 'is clipped or covered',
            ];
            return problems.filter(Boolean).map((problem) => `${part.textContent!.slice(0, 40)}: ${problem}`);
          });
        });
        expect(hidden, `the ${table} tooltip at ${width} px`).toEqual([]);
        await badge.blur();
        await expect(tooltip).toBeHidden();
      }
    }
  });
});

/** Whether `control` is the page's active element. */
function hasFocus(control: Locator): Promise<boolean> {
  return control.evaluate((el) => el === document.activeElement);
}

test('a confirmation and the Logs drawer, closed by a click or by Escape, give focus back to the button that opened them', async () => {
  await agent.cli('load', 'echo', 'm4');
  try {
    const row = page.getByTestId('supervised-m4');
    const stop = row.getByTestId('process-stop');
    const dialog = page.getByRole('dialog', { name: 'Stop m4?' });
    await stop.click();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await expect(dialog).toHaveCount(0);
    await expect.poll(() => hasFocus(stop), 'Cancel gives focus back to Stop').toBe(true);
    await stop.press('Enter');
    await expect(dialog.getByRole('button', { name: 'Cancel' })).toBeFocused();
    await page.keyboard.press('Escape');
    await expect(dialog).toHaveCount(0);
    await expect.poll(() => hasFocus(stop), 'Escape gives focus back to Stop').toBe(true);

    const logs = row.getByTestId('process-logs');
    const close = page.getByRole('button', { name: 'Close logs' });
    await logs.click();
    await expect(close).toBeFocused();
    await close.click();
    await expect(page.getByTestId('logs-drawer')).toHaveCount(0);
    await expect.poll(() => hasFocus(logs), 'Close gives focus back to Logs').toBe(true);
    await logs.press('Enter');
    await expect(close).toBeFocused();
    await page.keyboard.press('Escape');
    await expect(page.getByTestId('logs-drawer')).toHaveCount(0);
    await expect.poll(() => hasFocus(logs), 'Escape gives focus back to Logs').toBe(true);
  } finally {
    await agent.cli('stop', 'm4');
  }
});

test('the page ran without uncaught errors', async () => {
  expect(pageErrors.filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
});
