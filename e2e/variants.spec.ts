// The hardware variant picker of a meta gallery entry, against a real agent whose capability is forced to
// nvidia-cuda-12: every build listed, the machine's pick with its reason, builds that do not run here, the user's
// pick remembered by the node, and "Installed as" once the build is installed.
import { expect, test } from '@playwright/test';
import type { Locator, Page } from '@playwright/test';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunningAgent } from './fixtures/agent.ts';
import { docShot } from './fixtures/page.ts';
import { openSession, type Session } from './fixtures/session.ts';

test.describe.configure({ mode: 'serial' });

let session: Session;
let agent: RunningAgent;
let page: Page;
let pageErrors: string[];

const entry = (name: string): Locator => page.getByTestId(`gallery-entry-${name}`);

async function showGallery(query: string) {
  await page.getByTestId('nav-gallery').click();
  await page.getByTestId('gallery-search').fill(query);
}

test.beforeAll(async ({ browser }) => {
  session = await openSession(browser, 'e2e-variants', {
    env: { HANGAR_FORCE_CAPABILITY: 'nvidia-cuda-12' },
    prepare: async (gallery) => {
      await gallery.addEntry({
        name: 'llama',
        description: 'A meta backend with one build per kind of hardware',
        capabilities: { 'nvidia-cuda-12': 'cuda12-echo', default: 'cpu-echo', metal: 'metal-echo', amd: 'rocm-echo' },
      });
      for (const name of ['cuda12-echo', 'cpu-echo', 'metal-echo', 'rocm-echo']) {
        await gallery.addEntry({ name, uri: './echo', version: '1.0.0', alias: 'llama', description: `${name} build` });
      }
    },
  });
  ({ agent, page, pageErrors } = session);
  await page.goto(agent.pageUrl);
});

test.afterAll(async () => {
  await session?.close();
});

test('a meta entry lists its builds, marks the one for this machine with the reason, and the ones that do not run', async () => {
  await showGallery('llama');
  const llama = entry('llama');
  await expect(llama.getByTestId('meta-resolves')).toContainText('Installs cuda12-echo on this node');
  await expect(llama.getByTestId('meta-resolves')).toContainText('nvidia-cuda-12: NVIDIA GPU, CUDA 12 toolkit');
  await expect(llama.getByTestId('build-nvidia-cuda-12')).toContainText('chosen for this machine');
  for (const key of ['metal', 'amd']) {
    await expect(llama.getByTestId(`build-${key}`)).toContainText('does not run here');
    await expect(llama.getByTestId(`build-${key}`).getByRole('radio')).toBeDisabled();
  }
  await showGallery('metal-echo');
  await expect(entry('metal-echo')).toContainText('does not run here');
  await expect(entry('metal-echo').getByRole('button', { name: 'Install' })).toBeDisabled();
});

test('picking another build is remembered by the node and used by Install, which then shows "Installed as"', async () => {
  await showGallery('llama');
  const llama = entry('llama');
  await llama.getByTestId('build-default').getByRole('radio').click();
  await expect(llama.getByTestId('build-default')).toContainText('your pick');
  await expect(llama.getByTestId('meta-resolves')).toContainText('Installs cpu-echo on this node');
  const state = JSON.parse(await readFile(join(agent.home, 'state', 'variants.json'), 'utf8'));
  expect(state).toEqual({ llama: 'default' });

  await page.reload();
  await showGallery('llama');
  await expect(llama.getByTestId('build-default')).toContainText('your pick');

  await llama.getByRole('button', { name: 'Install' }).click();
  await expect(llama.getByTestId('meta-installed-as')).toHaveText('Installed as cpu-echo');
  await expect(llama.getByRole('button', { name: 'Install' })).toHaveCount(0);
  await page.mouse.move(0, 0);
  await docShot(page, 'screenshot-variants');
  const installed = JSON.parse(await agent.cli('ls', '--json')) as { name: string; metaBackendFor: string | null }[];
  expect(installed.map((b) => [b.name, b.metaBackendFor])).toEqual([
    ['cpu-echo', null],
    ['llama', 'cpu-echo'],
  ]);
  expect(pageErrors).toEqual([]);
});
