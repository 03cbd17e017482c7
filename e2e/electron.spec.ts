// Smoke test of the desktop shell through Playwright's Electron driver: the window, the bridge it exposes, and
// what it does not expose. It needs the Electron binary, which `npm install electron` downloads from GitHub.
import { _electron as electron, expect, test } from '@playwright/test';
import type { ElectronApplication, Page } from '@playwright/test';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { hangarMethods } from '../shared/index.ts';
import { findElectronBinary } from '../electron/shell/electron-binary.ts';

const binary = findElectronBinary();
const missing = 'missing' in binary ? binary.missing : null;
if (missing) console.warn(`\n*** e2e/electron.spec.ts NOT RUN: Electron binary not installed: ${missing} ***\n`);
test.skip(missing !== null, `Electron binary not installed: ${missing}`);
test.describe.configure({ mode: 'serial' });

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
type PageWindow = Window & { hangar: Record<string, unknown> & { info(req: { node: string }): Promise<{ home: string }> } };

let home: string;
let display: { name: string; server: ChildProcess | null };
let app: ElectronApplication;
let page: Page;

test.beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'hangar-electron-e2e-'));
  display = await ensureDisplay();
  const { ELECTRON_RUN_AS_NODE: _runAsNode, ...env } = process.env;
  app = await electron.launch({
    executablePath: 'path' in binary ? binary.path : '',
    // Chromium refuses to run as root with its OS sandbox; the renderer sandbox (sandbox: true) is unaffected.
    args: [...(process.getuid?.() === 0 ? ['--no-sandbox'] : []), '.'],
    cwd: repoRoot,
    env: { ...env, HANGAR_HOME: home, DISPLAY: display.name } as Record<string, string>,
  });
  page = await app.firstWindow();
});

test.afterAll(async () => {
  await app?.close();
  display?.server?.kill();
  if (home) await rm(home, { recursive: true, force: true });
});

test('the window shows the backends view', async () => {
  await expect(page.getByRole('heading', { name: 'Backends', level: 1 })).toBeVisible();
  expect(await app.evaluate(({ BrowserWindow }) => BrowserWindow.getAllWindows().length)).toBe(1);
});

test('window.hangar is exactly the contract plus onEvent, and it works', async () => {
  const keys = await page.evaluate(() => Object.keys((window as unknown as PageWindow).hangar).sort());
  expect(keys).toEqual([...hangarMethods, 'onEvent'].sort());
  const info = await page.evaluate(() => (window as unknown as PageWindow).hangar.info({ node: 'local' }));
  expect(info.home).toBe(home);
  const refused = await page.evaluate(() =>
    (window as unknown as PageWindow).hangar.info({ node: '../etc' }).then(() => 'resolved', (error: Error) => error.message),
  );
  expect(refused).toMatch(/^node: /);
});

test('the page has no Node: require and process are undefined', async () => {
  expect(await page.evaluate(() => [typeof (globalThis as Record<string, unknown>).require, typeof (globalThis as Record<string, unknown>).process])).toEqual([
    'undefined',
    'undefined',
  ]);
});

test('the page is served with the strict CSP and cannot open windows', async () => {
  const csp = await page.evaluate(() => fetch(location.href).then((r) => r.headers.get('content-security-policy')));
  expect(csp).toContain("default-src 'self'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(await page.evaluate(() => window.open('https://example.com/') === null)).toBe(true);
  expect(await app.evaluate(({ BrowserWindow }) => BrowserWindow.getAllWindows().length)).toBe(1);
});

/** Linux CI has no display: start Debian's Xvfb on a free display number for the run. */
async function ensureDisplay(): Promise<{ name: string; server: ChildProcess | null }> {
  if (process.platform !== 'linux' || process.env.DISPLAY) return { name: process.env.DISPLAY ?? '', server: null };
  const server = spawn('Xvfb', ['-displayfd', '3', '-screen', '0', '1280x800x24', '-nolisten', 'tcp'], {
    stdio: ['ignore', 'ignore', 'inherit', 'pipe'],
  });
  const number = await new Promise<string>((resolve, reject) => {
    let text = '';
    (server.stdio[3] as Readable).on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('\n')) resolve(text.trim());
    });
    server.once('error', reject);
    server.once('exit', (code) => reject(new Error(`Xvfb exited with ${code} before reporting its display`)));
  });
  return { name: `:${number}`, server };
}
