// A start of LocalAI that fails, in Settings → LocalAI: the build Hangar installed exits before it is ready, and the
// panel says why with the lines that LocalAI process wrote, once, until a start gets to ready.
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import { openLocalAiSession, type LocalAiSession } from './fixtures/localai-session.ts';
import { seriousViolations } from './fixtures/page.ts';

test.describe.configure({ mode: 'serial' });

let session: LocalAiSession;
let page: Page;

test.beforeAll(async ({ browser }) => {
  session = await openLocalAiSession(browser, 'e2e-localai-start-failure', [{ version: 'v3.1.0', failStart: 'stand-in: this build is broken (bad instruction)' }]);
  page = session.page;
  await session.agent.cli('localai', 'install');
  await page.goto(session.agent.pageUrl);
  await page.getByTestId('nav-settings').click();
});

test.afterAll(async () => {
  await session?.close();
});

test("a failed Start shows why with LocalAI's own last lines, said once", async () => {
  const panel = page.getByTestId('localai-run-settings');
  await panel.getByTestId('localai-start').click();
  const failed = panel.getByTestId('localai-run-failed-start');
  await expect(failed).toContainText(/^Last start, at \d\d:\d\d:\d\d: LocalAI exited before it was ready \(exit code 1\)/);
  await expect(failed.getByLabel("LocalAI's last log lines")).toContainText('ERR stand-in: this build is broken (bad instruction)');
  await expect(panel.getByTestId('localai-run-state')).toHaveText('LocalAI v3.1.0: stopped.');
  await expect(panel.getByText(/exited before it was ready/)).toHaveCount(1);
  await expect(panel.getByTestId('localai-run-error')).toHaveCount(0);
  expect(await seriousViolations(page)).toEqual([]);
});

test('once a start gets to ready, the failed one is no longer said', async () => {
  const panel = page.getByTestId('localai-run-settings');
  await session.releases.publish({ version: 'v3.2.0' });
  await panel.getByTestId('localai-check').click();
  await panel.getByTestId('localai-upgrade').click();
  await expect(panel.getByTestId('localai-run-operation')).toHaveText('Last upgrade: LocalAI v3.1.0 → v3.2.0; LocalAI started, answered /readyz and was stopped again, as it was');
  await expect(panel.getByTestId('localai-run-failed-start')).toHaveCount(0);
  await panel.getByTestId('localai-start').click();
  await expect(panel.getByTestId('localai-run-state')).toHaveText(/^LocalAI v3\.2\.0: ready/);
  await expect(panel.getByTestId('localai-run-failed-start')).toHaveCount(0);
});
