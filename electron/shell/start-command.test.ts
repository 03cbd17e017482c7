import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { startCommand } from './start-command.ts';

const electron = { path: '/opt/electron/electron' };
const none = { missing: 'the electron package has no binary' };

test('the desktop app gets --home as HANGAR_HOME; --listen or --ports run the headless agent with every option', () => {
  const desktop = startCommand(['--home', '/h'], electron, { ELECTRON_RUN_AS_NODE: '1', PATH: '/bin' }, '/node');
  assert.deepEqual([desktop.command, desktop.args, desktop.env, desktop.note], ['/opt/electron/electron', ['.'], { PATH: '/bin', HANGAR_HOME: '/h' }, null]);
  const served = startCommand(['--home', '/h', '--listen', '127.0.0.1:0', '--ports=29560-29569'], electron, {}, '/node');
  assert.deepEqual([served.command, served.args], ['/node', ['dist/agent/cli.js', 'agent', '--home', '/h', '--listen', '127.0.0.1:0', '--ports=29560-29569']]);
  assert.match(served.note!, /--listen and --ports asked for a served node/);
  assert.match(startCommand([], none, {}, '/node').note!, /no Electron binary here/);
  assert.throws(() => startCommand(['--home', '/h', '--gallery', 'x.yaml'], electron, {}, '/node'), /takes only --home; --gallery x\.yaml is for the headless agent/);
});

test('npm start passes --home, --listen and --ports on to the agent it starts', { skip: !existsSync('dist/agent/cli.js') && 'needs npm run build' }, async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'hangar-start-'));
  const child = spawn(process.execPath, ['scripts/start.mjs', '--home', home, '--listen', '127.0.0.1:0', '--ports', '29560-29569'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: true,
  });
  // Hooks run in the order they are added: the agent, which writes into its home, goes before the home does.
  t.after(() => {
    if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
  });
  t.after(() => rm(home, { recursive: true, force: true }));
  const lines = createInterface({ input: child.stdout! });
  let url: string | undefined;
  for await (const line of lines) {
    const match = /^hangar agent listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(line);
    if (match) {
      url = match[1];
      break;
    }
  }
  assert.ok(url, 'the agent reported its address');
  assert.notEqual(new URL(url).port, '8471', '--listen reached the agent');
  assert.ok(existsSync(join(home, 'state', 'token')), '--home reached the agent');
  process.kill(-child.pid!, 'SIGTERM');
  await once(child, 'exit');
});

test("npm's SIGTERM to `npm start` stops the agent it started: npm signals its shell, which runs the start script in its place", { skip: !existsSync('dist/agent/cli.js') && 'needs npm run build' }, async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'hangar-start-'));
  const script = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } }).scripts.start;
  assert.match(script, /^npm run build && /);
  // npm runs `sh -c SCRIPT ARGS` and, sent SIGTERM, passes it to that shell alone; the build is done already.
  const shell = spawn('sh', ['-c', `${script.replace(/^npm run build && /, '')} --home ${home} --listen 127.0.0.1:0`], { stdio: ['ignore', 'pipe', 'inherit'], detached: true });
  let agent = 0;
  t.after(async () => {
    if (shell.exitCode === null) process.kill(-shell.pid!, 'SIGKILL');
    // start.mjs gives the agent a process group of its own.
    if (agent > 0 && alive(agent)) process.kill(-agent, 'SIGKILL');
    await rm(home, { recursive: true, force: true });
  });
  for await (const line of createInterface({ input: shell.stdout! })) if (line.startsWith('hangar agent listening on ')) break;
  agent = (JSON.parse(readFileSync(join(home, 'state', 'agent.json'), 'utf8')) as { pid: number }).pid;
  shell.kill('SIGTERM');
  await once(shell, 'exit');
  const gone = Date.now() + 15_000;
  while (alive(agent) && Date.now() < gone) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(alive(agent), false, `the agent (pid ${agent}) outlived the SIGTERM npm sent`);
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
