import { defineConfig } from '@playwright/test';
import { CHROMIUM_ARGS, HEADLESS_SHELL_PATH } from './e2e/fixtures/chromium.ts';

export default defineConfig({
  testDir: 'e2e',
  workers: 2,
  fullyParallel: false,
  timeout: 120_000,
  expect: { timeout: 15_000 },
  outputDir: 'test-results',
  reporter: [['list']],
  // No trace by default: recording one for every spec (a screencast and a DOM snapshot at each step) cost the specs a
  // quarter of their time on two cores, for the rare failure it explains. `npx playwright test --trace
  // retain-on-failure SPEC` records one where a spec needs explaining; a failure's screenshot is always kept.
  use: { screenshot: 'only-on-failure', trace: 'off' },
  projects: [
    {
      name: 'chromium',
      use: { browserName: 'chromium', launchOptions: { executablePath: HEADLESS_SHELL_PATH, args: CHROMIUM_ARGS } },
    },
  ],
});
