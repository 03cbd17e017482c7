// Slow peers against a real agent whose open-file limit is 1,024 (its caps follow that limit: 256 connections without
// the token, 64 from one address): thousands of sockets that never finish their request cannot keep a token holder
// out, the agent never holds more of them than its cap, and it sheds every one of them within its header deadline.
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { openSlowSockets } from './hostile-peers.ts';
import { childCommands, describeFds, hangar, openFds, startAgent, until, type Agent } from './test-agent.ts';

const OPEN_FILES = 1024;
const PRE_AUTH_CAP = OPEN_FILES / 4;
/** Ten addresses, the CLI's own among them: the total cap binds, not only the per-address one. */
const ATTACKERS = Array.from({ length: 10 }, (_, i) => `127.0.0.${i + 1}`);

describe('the agent under a flood of slow connections', () => {
  let root: string;
  let agent: Agent;

  before(async () => {
    root = await tempDir('flood');
    const gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    agent = await startAgent(join(root, 'home'), gallery, [], process.env, OPEN_FILES);
  });

  after(async () => {
    agent.child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  });

  test('3,000 slow sockets: a token holder gets in while they are held, the agent holds at most its cap and sheds them all', { timeout: 60_000 }, async () => {
    const pid = agent.child.pid!;
    // At rest: the agent has answered a call and finished warming up: a shell waits for the next start (warm-shell.ts),
    // and the modules it read at its start are closed again.
    assert.equal((await hangar(agent, 'ls')).code, 0);
    await until('the agent warmed up', () => (childCommands(pid).some((command) => command.includes('run.sh')) ? true : undefined), 15_000);
    await sleep(500);
    const baseline = openFds(pid);
    const atRest = describeFds(pid);
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, openFds(pid))), 10);
    const flood = openSlowSockets(agent.url, 3000, ATTACKERS);
    try {
      await flood.settled;
      const ls = await hangar(agent, 'ls');
      const heldWhileAnswering = flood.open();
      assert.equal(ls.code, 0, ls.stderr);
      assert.ok(heldWhileAnswering >= PRE_AUTH_CAP / 2, `ls answered while the agent still held ${heldWhileAnswering} slow sockets`);
      const shed = await Promise.race([flood.allClosed.then(() => true), sleep(20_000, false)]);
      assert.ok(shed, `${flood.open()} slow sockets still open 20 s later`);
    } finally {
      clearInterval(sampler);
      flood.destroy();
    }
    assert.ok(peak <= baseline + PRE_AUTH_CAP + 16, `the agent held ${peak - baseline} descriptors over its ${baseline} at rest`);
    // Each socket the flood held is closed on the agent's side once it has read the close: a moment after the client's.
    await until('back to rest', () => (openFds(pid) <= baseline + 2 ? true : undefined), 2000, () => `${openFds(pid)} open (${describeFds(pid)}) against ${baseline} at rest (${atRest})`);
    assert.equal((await hangar(agent, 'ls')).code, 0);
  });
});
