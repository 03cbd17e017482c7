// agent_idle_rss_mb: resident memory of an idle `hangar agent` on the starter gallery, after it settles.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { median, type BenchFigure } from './figure.ts';

async function idleRssMb(): Promise<number> {
  const home = await mkdtemp(join(tmpdir(), 'hangar-bench-agent-'));
  const child = spawn(process.execPath, ['dist/agent/cli.js', 'agent', '--home', home, '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    await once(createInterface({ input: child.stdout }), 'line');
    await new Promise((r) => setTimeout(r, 3000));
    const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) / 1024;
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
    await rm(home, { recursive: true, force: true });
  }
}

export default async function (): Promise<BenchFigure[]> {
  const samples = [];
  for (let i = 0; i < 3; i++) samples.push(await idleRssMb());
  return [{ name: 'agent_idle_rss_mb', value: median(samples), unit: 'MB', goal: 80, note: 'VmRSS of an idle agent, 3 s after ready' }];
}
