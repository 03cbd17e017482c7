// Text from a gallery, an archive or a server, as the real CLI prints it: its control characters are shown escaped,
// so a hostile gallery cannot clear the screen, retitle the window or set the clipboard of whoever reads the output.
import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { backendEntries, makeTarGz } from '../core/install/testdata/fixtures.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { cliRunsAsProcesses, hangar, startAgent, type Agent } from './test-agent.ts';

cliRunsAsProcesses();

const ESC = '\x1b';
/** Red text, a window title, and a clipboard write (OSC 52), ended by BEL. */
const HOSTILE = `${ESC}[31m${ESC}]0;owned${ESC}\\${ESC}]52;c;b3duZWQ=\x07`;
const SHOWN = '\\u001b[31m\\u001b]0;owned\\u001b\\\\u001b]52;c;b3duZWQ=\\u0007';

function assertNoControls(what: string, text: string): void {
  assert.doesNotMatch(text, /(?![\t\n])\p{Cc}/u, `${what}: ${JSON.stringify(text)}`);
}

describe('text from outside, as the CLI prints it', () => {
  let root: string;
  let agent: Agent;

  before(async () => {
    root = await tempDir('terminal-text');
    const trap = join(root, 'trap.tar.gz');
    await writeFile(trap, await makeTarGz(backendEntries('1.0.0', [{ name: `../${HOSTILE}`, content: 'x' }])));
    const gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [
      { name: 'echo', uri: await echoSource(root, '1.0.0'), version: `1.0.0${HOSTILE}` },
      { name: 'trap', uri: trap, version: '1.0.0' },
    ]);
    agent = await startAgent(join(root, 'home'), gallery);
  });

  after(async () => {
    agent?.child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  });

  test("a gallery's version is shown escaped in gallery, install and ls", async () => {
    const gallery = await hangar(agent, 'gallery');
    assert.ok(gallery.stdout.split('\n').some((line) => line.startsWith('echo ') && line.includes(` 1.0.0${SHOWN}`)), gallery.stdout);
    const install = await hangar(agent, 'install', 'echo');
    assert.equal(install.code, 0, install.stderr);
    assert.equal(install.stdout, `installed echo 1.0.0${SHOWN}\n`);
    const ls = await hangar(agent, 'ls');
    for (const [what, text] of Object.entries({ gallery: gallery.stdout + gallery.stderr, install: install.stdout + install.stderr, ls: ls.stdout })) {
      assertNoControls(what, text);
    }
  });

  test("an archive entry's name is shown escaped in the install's one line of failure", async () => {
    const install = await hangar(agent, 'install', 'trap');
    assert.equal(install.code, 6);
    assert.equal(install.stderr.split('\n').filter((l) => l.startsWith('hangar: ')).at(-1), `hangar: install trap failed: backend "trap": entry "../${SHOWN}" climbs out of the tree with ".."`);
    assertNoControls('install', install.stdout + install.stderr);
  });
});
