// Real directories and real backends for the supervisor's tests and bench: a temp home with backends/, models/
// and state/, the starter echo backend bundled into it, and the out-of-band swap an install performs.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { build } from 'esbuild';
import { cpSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackendClient } from './grpc-client.ts';
import { currentPlatform } from '../platform/index.ts';
import { dirIdentity, procStat } from './identity.ts';
import { startTimeOf } from './signals.ts';
import { newRow, type Proc } from './process-records.ts';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
let echoBuild: Promise<string> | null = null;

export interface Home {
  root: string;
  backendsDir: string;
  modelsDir: string;
  stateDir: string;
  cleanup(): void;
}

export function makeHome(): Home {
  const root = mkdtempSync(join(tmpdir(), 'hangar-sup-'));
  const home = { root, backendsDir: join(root, 'backends'), modelsDir: join(root, 'models'), stateDir: join(root, 'state') };
  for (const dir of [home.backendsDir, home.modelsDir, home.stateDir]) mkdirSync(dir);
  return { ...home, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

/** The echo backend's files (run.sh, server.cjs), bundled once per process. */
function echoFiles(): Promise<string> {
  echoBuild ??= (async () => {
    const out = mkdtempSync(join(tmpdir(), 'hangar-echo-build-'));
    await build({
      entryPoints: [join(repo, 'backends/echo/server.ts')],
      outfile: join(out, 'server.cjs'),
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      logLevel: 'warning',
    });
    cpSync(join(repo, 'backends/echo/run.sh'), join(out, 'run.sh'));
    process.once('exit', () => rmSync(out, { recursive: true, force: true }));
    return out;
  })();
  return echoBuild;
}

/** Writes a complete echo backend tree at `dir` answering with `version`. */
export async function writeEcho(dir: string, version: string): Promise<void> {
  cpSync(await echoFiles(), dir, { recursive: true });
  writeFileSync(join(dir, 'VERSION'), `${version}\n`);
}

/** The Python backend fixture (Debian's python3-grpcio) copied to `dir`. */
export function writePyecho(dir: string, version: string): void {
  cpSync(join(repo, 'electron/core/supervisor/testdata/pyecho'), dir, { recursive: true });
  writeFileSync(join(dir, 'VERSION'), `${version}\n`);
}

/** A backend whose run.sh is `script` (a shell body). */
export function writeScriptBackend(dir: string, script: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'run.sh'), `#!/bin/sh\n${script}\n`);
  chmodSync(join(dir, 'run.sh'), 0o755);
}

// A featherweight backend for tests that need hundreds of processes: a Perl TCP relay (Perl is part of every
// Debian base system) listening on --addr and forwarding each connection to one shared echo server, so Health and
// LoadModel are real gRPC while a spawn costs a few milliseconds instead of a Node start.
const relay = String.raw`
use IO::Socket::INET; use IO::Select; use Socket qw(IPPROTO_TCP TCP_NODELAY);
my ($addr) = join(' ', @ARGV) =~ /--addr[ =](\S+)/ or die "usage: run.sh --addr HOST:PORT\n";
my $server = IO::Socket::INET->new(LocalAddr => $addr, Listen => 64, ReuseAddr => 1) or die "relay: cannot listen on $addr: $!\n";
print STDERR "relay: listening on $addr\n" if $ENV{RELAY_ANNOUNCE};
$SIG{CHLD} = "IGNORE";
while (1) {
  my $client = $server->accept or next;
  if (fork) { close $client; next }
  my $up = IO::Socket::INET->new(PeerAddr => $ENV{RELAY_UPSTREAM}) or exit 1;
  setsockopt($_, IPPROTO_TCP, TCP_NODELAY, 1) for $client, $up;
  my $sel = IO::Select->new($client, $up);
  while (my @ready = $sel->can_read) {
    for my $from (@ready) {
      my $n = sysread($from, my $buf, 65536);
      exit 0 unless $n;
      syswrite($from == $client ? $up : $client, $buf);
    }
  }
}
`;

/** A relay backend at `dir` forwarding to the gRPC server at `upstream` (HOST:PORT); `announce`: it says when it listens. */
export function writeRelayBackend(dir: string, upstream: string, options: { announce?: boolean } = {}): void {
  const announce = options.announce ? 'RELAY_ANNOUNCE=1 ' : '';
  writeScriptBackend(dir, `${announce}RELAY_UPSTREAM=${upstream} exec perl "$(dirname "$0")/relay.pl" "$@"`);
  writeFileSync(join(dir, 'relay.pl'), relay);
}

/** The echo backend served from `<root>/upstream`: what relay backends forward to. */
export async function startUpstream(root: string): Promise<EchoServer> {
  const dir = join(root, 'upstream');
  await writeEcho(dir, 'upstream');
  return startEchoServer(dir);
}

export interface EchoServer {
  address: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts an echo server outside any supervisor (the relays' upstream); resolves once it listens. */
export async function startEchoServer(dir: string): Promise<EchoServer> {
  const address = `127.0.0.1:${await freePort()}`;
  const child = spawn(join(dir, 'run.sh'), ['--addr', address], { cwd: dir, env: { ...process.env, HANGAR_NODE: process.execPath }, stdio: ['ignore', 'ignore', 'pipe'] });
  const [line] = (await once(createInterface({ input: child.stderr! }), 'line')) as [string];
  if (!line.includes('listening')) throw new Error(`echo server did not start: ${line}`);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  };
  return { address, child, stop };
}

/** A supervisor row for an echo server started by startEchoServer in `dir`, as a row adopted from a table reads. */
export async function echoRow(echo: { address: string; child: ChildProcess }, model: string, dir: string): Promise<Proc> {
  const pid = echo.child.pid!;
  return newRow({
    model,
    backend: 'echo',
    pid,
    port: Number(echo.address.split(':')[1]),
    identity: await dirIdentity(dir),
    startedAt: new Date().toISOString(),
    startTime: await startTimeOf(currentPlatform(), pid),
    cgroup: null,
    cwd: { cwd: 'unknown', cwdReason: 'not yet checked', procCwd: null },
    result: null,
    logs: null,
    detach: null,
    client: new BackendClient(echo.address),
    loaded: false,
    message: null,
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Replaces `<backendsDir>/<name>` the way an install does, behind the supervisor's back: stage in .install-tmp,
 * rename live -> .install-backup, staged -> live, delete the backup.
 */
export async function swapOutOfBand(backendsDir: string, name: string, write: (dir: string) => void | Promise<void>): Promise<void> {
  await write(join(backendsDir, `${name}.install-tmp`));
  swapStaged(backendsDir, name);
}

/** The swap's renames and delete, once `<name>.install-tmp` is staged. */
export function swapStaged(backendsDir: string, name: string): void {
  const live = join(backendsDir, name);
  renameSync(live, `${live}.install-backup`);
  renameSync(`${live}.install-tmp`, live);
  rmSync(`${live}.install-backup`, { recursive: true, force: true });
}

export const PYTHON = process.env.HANGAR_PYTHON ?? '/usr/bin/python3';

/** The Python backend needs Debian's python3-grpcio: without it these tests fail and say what to install. */
export function assertPythonGrpc(): void {
  const probe = spawnSync(PYTHON, ['-c', 'import grpc, google.protobuf']);
  assert.equal(probe.status, 0, `${PYTHON} cannot import grpc: install Debian's python3-grpcio (sudo .ci/run does)`);
}

/** The processes `host` started whose command line holds `text`, read from /proc. */
export function childrenOf(host: number, text: string): number[] {
  return readdirSync('/proc').map(Number).filter((pid) => {
    try {
      return Number.isInteger(pid) && procStat(pid)?.ppid === host && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text);
    } catch {
      return false;
    }
  });
}
