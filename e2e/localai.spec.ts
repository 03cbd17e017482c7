// The backends view over a directory LocalAI shares, against a real agent: the build LocalAI runs for a name and why,
// a meta whose build is gone (broken, with Reinstall), what only LocalAI lists (its leftovers with Restore and Delete,
// a name with a space, an alias of its own), and the rollback tree of a backend LocalAI deleted.
import AxeBuilder from '@axe-core/playwright';
import { expect, test } from '@playwright/test';
import type { Locator, Page } from '@playwright/test';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { buildMetadata, metaMetadata, writeLocalAiDir } from '../electron/core/testing/localai-layout.ts';
import type { RunningAgent } from './fixtures/agent.ts';
import { shot } from './fixtures/page.ts';
import { openSession, type Session } from './fixtures/session.ts';

test.describe.configure({ mode: 'serial' });

let session: Session;
let agent: RunningAgent;
let page: Page;
let pageErrors: string[];

const row = (name: string): Locator => page.getByTestId(`backend-row-${name}`);

async function confirm(title: string, button: string) {
  const dialog = page.getByRole('dialog', { name: title });
  await expect(dialog.getByTestId('impact')).toBeVisible();
  await dialog.getByRole('button', { name: button, exact: true }).click();
  await expect(dialog).toHaveCount(0);
}

test.beforeAll(async ({ browser }) => {
  session = await openSession(browser, 'e2e-localai', {
    env: { HANGAR_FORCE_CAPABILITY: 'default' },
    prepare: async (gallery) => {
      await gallery.addEntry({ name: 'store', capabilities: { default: 'cpu-store' } });
      await gallery.addEntry({ name: 'cpu-store', uri: './echo', version: '1.0.0' });
      await gallery.addEntry({ name: 'cpu-store-development', uri: './echo', version: '1.0.0', alias: 'store' });
      await gallery.addEntry({ name: 'orphan', capabilities: { default: 'cpu-orphan' } });
      await gallery.addEntry({ name: 'cpu-orphan', uri: './echo', version: '1.0.0' });
      // As LocalAI leaves the directory: store and store-development installed, a meta whose build is gone, leftovers
      // of an interrupted install, a name with a space, a build reached only by its alias, and a rollback tree of a
      // backend LocalAI deleted.
      const backends = join(gallery.dir, '..', 'home', 'backends');
      const dirs: [string, Parameters<typeof writeLocalAiDir>[2]][] = [
        ['cpu-store', { runSh: 'echo', metadata: buildMetadata('cpu-store', { version: '1.0.0' }) }],
        ['store', { runSh: 'none', metadata: metaMetadata('store', 'cpu-store', '1.0.0') }],
        ['cpu-store-development', { runSh: 'echo', metadata: buildMetadata('cpu-store-development', { alias: 'store', version: '1.0.0' }) }],
        ['orphan', { runSh: 'none', metadata: metaMetadata('orphan', 'cpu-orphan', '1.0.0') }],
        ['thing.install-backup', { runSh: 'echo', metadata: buildMetadata('thing', { version: '0.9.0' }) }],
        ['thing.install-tmp', { runSh: 'echo', metadata: buildMetadata('thing', { version: '1.0.0' }) }],
        ['my backend', { runSh: 'echo', metadata: null }],
        ['cpu-widget', { runSh: 'echo', metadata: buildMetadata('cpu-widget', { alias: 'widget' }) }],
      ];
      for (const [name, spec] of dirs) await writeLocalAiDir(backends, name, spec);
      const kept = await writeLocalAiDir(join(backends, '.hangar', 'previous'), 'gone', { runSh: 'echo', metadata: buildMetadata('gone', { version: '0.9.0' }) });
      await cp(join(gallery.dir, 'echo'), join(kept, 'lib'), { recursive: true });
    },
  });
  ({ agent, page, pageErrors } = session);
  await page.setViewportSize({ width: 1280, height: 2400 }); // every row at once: the list renders only what is in view
  await page.goto(agent.pageUrl);
  await expect(row('store')).toBeVisible();
});

test.afterAll(async () => {
  await session?.close();
});

test('a meta row names the build LocalAI runs for it and why, and Load starts that build', async () => {
  const store = row('store');
  await expect(store.getByTestId('backend-runs')).toHaveText('runs cpu-store-development');
  await expect(store.getByTestId('backend-localai')).toContainText(
    "LocalAI runs cpu-store-development for store, not cpu-store: store is the alias of cpu-store-development; an alias wins over a meta backend's own build",
  );
  await store.getByTestId('load-model-input').fill('m1');
  await store.getByRole('button', { name: 'Load', exact: true }).click();
  await expect(store.getByTestId('load-result')).toBeVisible();
  await expect(row('cpu-store-development').getByRole('listitem').filter({ hasText: 'm1' })).toBeVisible();
  const ps = await agent.ps();
  expect(ps.map((p) => [p.model, p.backend])).toEqual([['m1', 'cpu-store-development']]);
});

test('what only LocalAI lists is shown as LocalAI sees it, with a screenshot of every kind of row', async () => {
  await expect(row('orphan').getByTestId('backend-broken')).toHaveText('Broken: its build cpu-orphan is not installed. Reinstall puts it right.');
  await expect(row('thing.install-backup').getByTestId('backend-kind')).toHaveText('LocalAI leftover');
  await expect(row('thing.install-backup').getByTestId('backend-localai')).toContainText('thing is gone: Restore puts this tree back as thing');
  await expect(row('thing.install-tmp').getByTestId('action-restore')).toHaveAttribute('aria-disabled', 'true');
  await expect(row('my backend').getByTestId('backend-kind')).toHaveText('not managed by Hangar');
  await expect(row('widget').getByTestId('backend-kind')).toHaveText('LocalAI alias');
  await expect(row('widget').getByTestId('backend-runs')).toHaveText('runs cpu-widget');
  await expect(row('gone').getByTestId('backend-kind')).toHaveText('kept from a deleted backend');
  await expect(row('gone').getByTestId('backend-kept')).toHaveText(/^\d+(\.\d)? (KiB|MiB), removed on \d{4}-\d\d-\d\d$/);
  await shot(page, 'localai-rows');
  const { violations } = await new AxeBuilder({ page }).analyze();
  expect(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id)).toEqual([]);
});

test('Reinstall puts an orphaned meta right; Restore and Delete settle the leftovers; Delete removes a kept tree', async () => {
  await row('orphan').getByTestId('action-reinstall').click();
  await confirm('Reinstall orphan?', 'Reinstall');
  await expect(row('orphan').getByTestId('backend-broken')).toHaveCount(0);
  await expect(row('cpu-orphan')).toBeVisible();

  await row('thing.install-backup').getByTestId('action-restore').click();
  await confirm('Restore thing from thing.install-backup?', 'Restore');
  await expect(row('thing.install-backup')).toHaveCount(0);
  await expect(row('thing').getByTestId('backend-version')).toHaveText('0.9.0');

  await row('thing.install-tmp').getByTestId('action-delete').click();
  await confirm('Delete thing.install-tmp?', 'Delete');
  await expect(row('thing.install-tmp')).toHaveCount(0);

  await row('gone').getByTestId('action-delete').click();
  await confirm('Delete the kept copy of gone?', 'Delete');
  await expect(row('gone')).toHaveCount(0);
  const listed = JSON.parse(await agent.cli('ls', '--json')) as { name: string; kind: string }[];
  expect(listed.map((b) => `${b.name}:${b.kind}`)).toEqual([
    'cpu-orphan:backend', 'cpu-store:backend', 'cpu-store-development:backend', 'cpu-widget:backend', 'my backend:foreign',
    'orphan:backend', 'store:backend', 'thing:backend', 'widget:alias',
  ]);
  expect(pageErrors).toEqual([]);
});
