// Runs every node:test file (*.test.ts) under the source folders, through the TypeScript hooks in scripts/ts.
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync, statfsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { warm } from './ts/transform.mjs';

const roots = ['shared', 'electron', 'backends', 'renderer/src'];
const filter = process.argv.slice(2);

/** The files under `dir` whose names match `pattern`. */
function* walk(dir, pattern) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(path, pattern);
    else if (pattern.test(entry.name)) yield path;
  }
}

/**
 * The files that take longest (measured on a 2-core machine), started first: with a few files at a time, the run
 * ends when its last file does, and a long one started last would run alone at the end.
 */
const LONGEST = [
  'electron/core/install/legit-trees.test.ts',
  'electron/core/supervisor/supervisor-lifetime.test.ts',
  'electron/localai/server/localai-server-truth.test.ts',
  'electron/fleet/rollouts/desired.test.ts',
  'electron/core/install/ratio.test.ts',
  'electron/cluster/stored-order.test.ts',
  'electron/fleet/rollouts/rollout-resume.test.ts',
  'electron/localai/server/localai-server-hostile.test.ts',
  'electron/core/supervisor/lifecycle.test.ts',
  'electron/agent/agent.test.ts',
  'electron/cluster/store-writes.test.ts',
  'electron/core/node-localai.test.ts',
  'electron/cluster/stored-state.test.ts',
  'electron/agent/cli-messages.test.ts',
  'electron/cluster/join.test.ts',
  'electron/agent/hostile-input.test.ts',
  'electron/fleet/rollouts/rollout-cases.test.ts',
  'electron/cluster/cluster.test.ts',
  'electron/cluster/large-reply.test.ts',
  'electron/localai/runner/localai-run.test.ts',
  'electron/agent/cli-exit-codes.test.ts',
  'electron/core/node.test.ts',
  'electron/cluster/auth.test.ts',
  'electron/localai/agent-workers.test.ts',
  'electron/cluster/revoke.test.ts',
  'electron/fleet/localai-marks.test.ts',
  'electron/localai/agent-worker-commands.test.ts',
  'electron/localai/server/localai-server.test.ts',
  'electron/agent/full-disk.test.ts',
  'electron/cluster/labels.test.ts',
  'electron/cluster/admin-cli.test.ts',
];
/** Run again with HANGAR_PLATFORM=posix in a full run, longest first. */
const POSIX = [
  'electron/core/supervisor/lifecycle.test.ts',
  'electron/localai/server/localai-server-truth.test.ts',
  'electron/core/supervisor/stop-tree.test.ts',
  'electron/core/supervisor/pid-reuse.test.ts',
  'electron/core/supervisor/scan-tree.test.ts',
  'electron/core/supervisor/reuse-gates.test.ts',
];
const rank = (file) => (LONGEST.includes(file) ? LONGEST.indexOf(file) : LONGEST.length);
const files = roots
  .flatMap((root) => [...walk(root, /\.test\.ts$/)])
  .filter((f) => filter.length === 0 || filter.some((p) => f.includes(p)))
  .sort((a, b) => rank(a) - rank(b));
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
// Files run side by side, each in its own process: their supervisors reserve backend ports machine-wide, and every
// test that needs a fixed port has a range of its own below the ephemeral ports. A file spends part of its time
// waiting on its agents and backends, so one file more than there are cores keeps them busy (on 2 cores: 433 s
// against 485 s with 2; with 4, `.ci/run` took 680 and 685 s against 617 s with 3). HANGAR_TEST_CONCURRENCY overrides.
const concurrency = Number(process.env.HANGAR_TEST_CONCURRENCY) || Math.min(4, availableParallelism() + 1);
// --test-force-exit: a file whose tests have all ended exits, even if a child it leaked still holds one of its pipes
// (a shell's sleeping child once held a file open for ten minutes, and its lane with it).
const tsHooks = new URL('./ts/register.mjs', import.meta.url).href;
const unhooked = new URL('./unhooked-test-runner.mjs', import.meta.url).href;
const leftovers = new URL('./test-leftovers.mjs', import.meta.url).href;
const args = (list, lanes) => ['--import', tsHooks, '--import', unhooked, '--import', leftovers, '--test', '--test-force-exit', `--test-concurrency=${lanes}`, ...list];
const exitOf = (child) => new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)));

/**
 * The tests' temporary folders are made in RAM where Linux has its tmpfs at /dev/shm with room for them and TMPDIR is
 * not set: they write gigabytes of real fixtures and installs (a 240 MiB tree from five sources, 600 MiB from three),
 * which on disk the kernel also writes back meanwhile. On 2 cores the unit run took 382 s so, against 442 s in /tmp
 * the same evening. A container's /dev/shm (64 MiB by default in Docker) is too small: /tmp then. The folder is open
 * to all with the sticky bit, as /tmp is: a test runs a child as an unprivileged user.
 */
const RAM_TMP_ROOM = 8 * 1024 ** 3;
function ramTmpdir() {
  if (process.env.TMPDIR || process.platform !== 'linux') return null;
  try {
    const { bavail, bsize } = statfsSync('/dev/shm');
    if (bavail * bsize < RAM_TMP_ROOM) return null;
    const dir = mkdtempSync('/dev/shm/hangar-tests-');
    chmodSync(dir, 0o1777);
    return dir;
  } catch {
    return null; // no /dev/shm here: the system's temporary folder
  }
}
const ramTmp = ramTmpdir();
if (ramTmp) process.env.TMPDIR = ramTmp;
// Every source made a module once, here, in one esbuild (625 files in about a second): otherwise each test file's
// process would start an esbuild of its own for the one file no other process loads, itself.
await warm(roots.flatMap((root) => [...walk(root, /\.tsx?$/)]).map((path) => resolve(path)));

const main = spawn(process.execPath, args(files, concurrency), { stdio: 'inherit' });
// A full run also runs these again under the POSIX platform layer (ps, lsof, process groups: what macOS has), beside
// the rest in a lane of their own: under posix their fixed ports are other ranges (core/testing/test-ports.ts). The
// set is the most telling of the supervisor's, the swaps', the scan's and the LocalAI server link's; run any other
// file so with `HANGAR_PLATFORM=posix node scripts/test.mjs FILE`. Its report is printed once the main run's is done.
const posixRun = filter.length === 0 && process.env.HANGAR_PLATFORM !== 'posix';
let posixStatus = Promise.resolve(0);
const posixReport = [];
if (posixRun) {
  const posix = spawn(process.execPath, args(POSIX, 1), { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HANGAR_PLATFORM: 'posix' } });
  posix.stdout.on('data', (chunk) => posixReport.push(chunk));
  posix.stderr.on('data', (chunk) => posixReport.push(chunk));
  posixStatus = exitOf(posix);
}
const status = await exitOf(main);
const posixCode = await posixStatus;
if (posixRun) {
  process.stdout.write('\n# the same files again, under HANGAR_PLATFORM=posix\n');
  process.stdout.write(Buffer.concat(posixReport));
  if (posixCode !== 0) console.error(`test: the files run again under HANGAR_PLATFORM=posix failed: ${POSIX.join(' ')}`);
}
// What a test left behind would otherwise hold RAM until the machine restarts.
if (ramTmp) {
  try {
    rmSync(ramTmp, { recursive: true, force: true, maxRetries: 3 });
  } catch (error) {
    console.error(`test: ${ramTmp} is left behind: ${error.message}`);
  }
}
process.exit(status || posixCode);
