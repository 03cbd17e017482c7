// cli_ms: `hangar ps --json` against a running agent, the whole command as a user runs it (`hangar` on PATH: the bin
// script), against a floor measured in the same run: `node -e` that opens the agent's WebSocket, makes one call and
// exits (what any CLI must do). The note adds `npx hangar`, what the same command costs when run through npx.
import { execFileSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { median, type BenchFigure } from './figure.ts';
import { startAgent } from '../e2e/fixtures/agent.ts';
import { copyStarterGallery } from '../e2e/fixtures/gallery.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const RUNS = 10;
const NPX_RUNS = 5;

const FLOOR = `
const WebSocket = require('ws');
const [url, token] = process.argv.slice(1);
const socket = new WebSocket(url.replace(/^http/, 'ws') + '/api/ws', ['hangar.v1', 'hangar.token.' + token]);
socket.on('open', () => socket.send(JSON.stringify({ id: 1, method: 'processes', params: { node: 'local' } })));
socket.on('message', (data) => { process.stdout.write(String(data)); socket.close(); });
`;

function timeCommand(file: string, args: string[]): number {
  const start = performance.now();
  execFileSync(file, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  return performance.now() - start;
}

export default async function (): Promise<BenchFigure[]> {
  const root = await mkdtemp(join(tmpdir(), 'hangar-bench-cli-'));
  const gallery = await copyStarterGallery(join(root, 'gallery'));
  const agent = await startAgent({ home: join(root, 'home'), gallery: gallery.index });
  try {
    const cli: number[] = [];
    const floor: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      floor.push(timeCommand(process.execPath, ['-e', FLOOR, agent.url, agent.token]));
      cli.push(timeCommand('bin/hangar.js', ['--node', agent.url, '--token', agent.token, 'ps', '--json']));
    }
    const npx: number[] = [];
    for (let i = 0; i < NPX_RUNS; i++) npx.push(timeCommand('npx', ['--no-install', 'hangar', '--node', agent.url, '--token', agent.token, 'ps', '--json']));
    const [cliMs, floorMs] = [median(cli), median(floor)];
    return [
      {
        name: 'cli_ms',
        value: cliMs,
        unit: 'ms',
        goal: 1.3 * floorMs,
        note: `hangar ps --json; floor node -e + one WebSocket call ${floorMs.toFixed(0)} ms (goal 1.3x floor), median of ${RUNS}; through npx hangar: ${median(npx).toFixed(0)} ms`,
      },
    ];
  } finally {
    await agent.stop();
    await rm(root, { recursive: true, force: true });
  }
}
