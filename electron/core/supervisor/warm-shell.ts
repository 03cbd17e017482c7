// One backend start made ahead. A shell, forked from the host while nothing starts and already in a fresh cgroup of
// its own, waits for the directory and port of the next start, changes to that directory and becomes its run.sh.
// What a start otherwise pays first is then paid before it is asked for: the fork (its cost grows with the host's
// memory), the shell's own start, and the move into the cgroup (a move between cgroups can wait out an RCU grace
// period: 0 to 25 ms on a 2-core machine). A start that cannot use it is spawned as before (spawn.ts).
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import type { ResultPromise } from 'execa';
import { RUN_SH } from '../install/run-file.ts';
import type { Cgroups } from './cgroups.ts';
import { JOIN_CGROUP, backendArgs, type SpawnedAhead } from './spawn.ts';
import { HangarError } from '../../../shared/errors.ts';

/**
 * $0: the cgroup to join ('' for none); $1: the platform layer's setup of a backend's first process. Then a line each on stdin: the backend's directory and its port. Once in the
 * directory it says so on fd 3, then becomes run.sh with the arguments a direct spawn gives it. A host that dies
 * first closes stdin: the shell ends.
 */
const WAIT_THEN_RUN = `[ -z "$0" ] || ${JOIN_CGROUP}
eval "$1"
IFS= read -r dir || exit 0
IFS= read -r port || exit 0
cd -- "$dir" || exit 127
printf . >&3
exec "$dir/${RUN_SH}" ${backendArgs('$port').join(' ')} 3>&- </dev/null`;

/** A shell waiting for a start: `go` makes it the backend, `end` ends it unused. */
export class WaitingShell implements SpawnedAhead {
  /** Resolves when the shell (later the backend) has exited. */
  readonly exit: Promise<{ code: number | null; signal: string | null }>;

  constructor(
    readonly child: ResultPromise,
    readonly cgroup: string | null,
    /** Where the shell says it is in the backend's directory (fd 3). */
    private readonly said: Readable,
  ) {
    this.exit = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    // A shell that died meanwhile (EPIPE on its stdin) is told of as its exit, not as an error of the host.
    for (const stream of [child.stdin!, said]) stream.on('error', () => undefined);
    this.hold(false);
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Tells it the backend's directory and port; resolves once it is in that directory, or has exited. */
  async go(dir: string, port: number): Promise<void> {
    this.hold(true);
    const inDir = new Promise<void>((resolve) => this.said.once('data', () => resolve()));
    this.child.stdin!.end(`${dir}\n${port}\n`);
    await Promise.race([inDir, this.exit]);
    // Read or not, the orders are over: their pipes go, as a direct spawn has none.
    this.said.destroy();
    this.child.stdin!.destroy();
  }

  async end(): Promise<void> {
    this.hold(true);
    this.child.kill('SIGKILL');
    await this.child;
  }

  /** While it only waits, neither the shell nor its pipes keep the host's event loop alive. */
  private hold(held: boolean): void {
    const { child } = this;
    if (held) child.ref();
    else child.unref();
    for (const stream of [child.stdin, child.stdout, child.stderr, this.said] as Socket[]) {
      if (held) stream.ref();
      else stream.unref();
    }
  }
}

/** Holds at most one waiting shell, with the environment every backend of this host gets. */
export class WarmShell {
  #waiting: WaitingShell | null = null;
  #filling: Promise<void> | null = null;
  #closed = false;

  constructor(
    private readonly cgroups: Cgroups,
    private readonly env: () => Record<string, string | undefined>,
    private readonly leaderSetup: string,
  ) {}

  /** The waiting shell, now the caller's; null when none waits, it died, or `dir` cannot be told on one line. */
  take(dir: string): WaitingShell | null {
    const shell = this.#waiting;
    if (!shell || dir.includes('\n')) return null;
    this.#waiting = null;
    if (shell.alive) return shell;
    void this.discard(shell);
    return null;
  }

  /** Spawns a shell to wait for the next start, unless one waits or is on its way, or this is closed. */
  fill(): void {
    if (this.#closed || this.#waiting || this.#filling) return;
    this.#filling = this.spawn()
      .then((shell) => void (this.#waiting = shell), () => undefined)
      .finally(() => (this.#filling = null));
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#filling;
    const shell = this.#waiting;
    this.#waiting = null;
    if (shell) await this.discard(shell);
  }

  private async spawn(): Promise<WaitingShell> {
    const { execa } = await import('execa');
    const cgroup = await this.cgroups.create();
    const shell = execa('/bin/sh', ['-c', WAIT_THEN_RUN, cgroup ?? '', this.leaderSetup], {
      cwd: '/',
      env: this.env(),
      detached: true,
      cleanup: true,
      reject: false,
      buffer: false,
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    });
    if (shell.pid === undefined) {
      await shell;
      await this.cgroups.release(cgroup);
      throw new HangarError('failed', 'the shell did not start');
    }
    // Its fd 3 is this module's business: to the rest, it is a backend's process.
    return new WaitingShell(shell as unknown as ResultPromise, cgroup, shell.stdio[3]);
  }

  private async discard(shell: WaitingShell): Promise<void> {
    await shell.end();
    await this.cgroups.release(shell.cgroup);
  }
}
