// The Settings view when the node's disk is full (a real tmpfs, filled to its last page): a change the node cannot
// write is shown as refused, with the reason, and the switch goes back to what the node keeps.
import { expect, test } from '@playwright/test';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mountTmpfs } from '../electron/core/testing/tmpfs.ts';
import { startAgent } from './fixtures/agent.ts';
import { collectErrors } from './fixtures/page.ts';

test('a setting the node cannot write is refused in the view, with the reason, and the switch goes back', async ({ browser }) => {
  const root = await mkdtemp(join(tmpdir(), 'hangar-e2e-full-disk-'));
  const home = join(root, 'home');
  await mkdir(home);
  const disk = mountTmpfs(home, '8m', 'e2e/full-disk.spec.ts');
  if (!disk) {
    await rm(root, { recursive: true });
    return test.skip(true, 'mounting a tmpfs needs root');
  }
  const agent = await startAgent({ home });
  const page = await browser.newPage();
  try {
    const pageErrors = collectErrors(page);
    await page.goto(agent.pageUrl);
    await page.getByTestId('nav-settings').click();
    const autoUpgrade = page.getByTestId('setting-auto-upgrade');
    await expect(autoUpgrade).not.toBeChecked();
    await disk.fill();
    await autoUpgrade.click();
    await expect(page.getByTestId('settings-error')).toContainText(/the settings were not changed: cannot write \S+settings\.json: no space left on device/);
    await expect(autoUpgrade).not.toBeChecked();
    expect(JSON.parse(await agent.cli('settings', '--json')).settings.autoUpgrade).toBe(false);
    await disk.free();
    await page.getByTestId('settings-error').getByRole('button', { name: 'Dismiss' }).click();
    await autoUpgrade.click();
    await expect(autoUpgrade).toBeChecked();
    await expect(page.getByTestId('settings-error')).toHaveCount(0);
    expect(pageErrors).toEqual([]);
  } finally {
    await page.close();
    await agent.stop();
    disk.unmount();
    await rm(root, { recursive: true, force: true });
  }
});
