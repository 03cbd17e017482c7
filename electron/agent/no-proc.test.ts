// An agent under HANGAR_PLATFORM=posix, traced with strace while it starts, scans its backends directory and reports
// the machine's resources: its own process reads no /proc/<pid>/ file (its ps and lsof children are not counted).
// The agent runs from source (tsx), the same code the build bundles.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { procReadsOf, programsRun, requireStrace, straceArgs, tracedPid } from '../core/platform/testing/strace.ts';
import { TS_NODE } from '../core/testing/ts-node.ts';

const CLI = 'electron/agent/cli.ts';
const run = promisify(execFile);

test('an agent under HANGAR_PLATFORM=posix starts, scans and reports resources without reading /proc/<pid>/', { timeout: 600_000 }, async () => {
  requireStrace();
  const root = mkdtempSync(join(tmpdir(), 'hangar-agent-strace-'));
  const home = join(root, 'home');
  const traces = join(root, 'traces');
  mkdirSync(traces);
  const env = { ...process.env, HANGAR_PLATFORM: 'posix' };
  const tracer = spawn('strace', straceArgs(traces, [process.execPath, ...TS_NODE, CLI, 'agent', '--home', home, '--listen', '127.0.0.1:0']), { env, stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const [first] = (await once(createInterface({ input: tracer.stdout! }), 'line')) as [string];
    const url = /^hangar agent listening on (\S+)$/.exec(first)?.[1];
    assert.ok(url, `the agent listens: ${first}`);
    const ask = (command: string) => run(process.execPath, [...TS_NODE, CLI, '--node', url, '--home', home, command], { env });
    assert.match((await ask('scan')).stdout, /no process runs from the backends directory/);
    assert.match((await ask('resources')).stdout, /ram/);
    const agent = tracedPid(traces, CLI);
    assert.ok(agent, 'the agent is found in the trace');
    process.kill(agent, 'SIGTERM');
    await once(tracer, 'exit');
    assert.ok(programsRun(traces).has('lsof'), 'the scan asked lsof');
    const { threads, reads } = procReadsOf(traces, agent);
    assert.ok(threads > 1, `the agent's threads are told from its children (${threads} found)`);
    assert.deepEqual(reads, []);
  } finally {
    if (tracer.exitCode === null) tracer.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  }
});
