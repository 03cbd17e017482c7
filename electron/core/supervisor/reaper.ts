// Parent watch. Backends run in their own process groups (so a stop can signal the whole group), so a host
// that dies abruptly would orphan them. One small reaper per host, in its own session so a terminal's ^C to the
// host's group does not take it down too, holds the read end of a pipe from the host and the list of backend
// process groups. Pipe EOF without a prior "release" means the host died (SIGKILL, crash, exit without close()):
// the reaper signals every listed group and exits. It first reads, from /proc, every descendant of those groups'
// members by parent links, and signals them too: a backend's child that left the group with setsid is part of
// the backend, and once its parent dies it is re-parented and no later walk could find it.
//
// Trade-off, chosen over `setpriv --pdeathsig`: pdeathsig fires on ANY parent exit, clean or not, and only on
// the process it is set on (not on what a backend forks). With the reaper, close({ stopAll: false }) sends
// "release" and adopted or kept-alive backends survive a clean exit, while an abrupt death still kills them.
// The price: a backend that survives its host loses its stdout/stderr pipes (later writes get EPIPE), and if the
// reaper itself is SIGKILLed, the watch is gone until the next host run re-adopts the backends.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { Socket } from 'node:net';

const script = `
trap '' HUP INT
groups=' '
while read -r verb pgid; do
  case $verb in
    watch) groups="$groups$pgid " ;;
    unwatch) case $groups in *" $pgid "*) groups="\${groups%% $pgid *} \${groups#* $pgid }" ;; esac ;;
    release) exit 0 ;;
  esac
done
tree=$(for f in /proc/[0-9]*/stat; do read -r l < "$f" && printf '%s\\n' "$l"; done 2>/dev/null | awk -v groups="$groups" '
  { pid = $1; sub(/.*\\) /, ""); ppid[pid] = $2; if (index(groups, " " $3 " ")) keep[pid] = 1 }
  END {
    do { grew = 0; for (p in ppid) if (!(p in keep) && (ppid[p] in keep)) { keep[p] = 1; grew = 1 } } while (grew)
    for (p in keep) print p
  }')
for g in $groups; do kill -TERM -"$g" 2>/dev/null; done
kill -TERM $tree 2>/dev/null
sleep 1
for g in $groups; do kill -KILL -"$g" 2>/dev/null; done
kill -KILL $tree 2>/dev/null
`;

export class Reaper {
  private readonly child: ChildProcess;
  private readonly exited: Promise<unknown>;

  constructor() {
    this.child = spawn('/bin/sh', ['-c', script], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
    this.exited = once(this.child, 'exit').catch(() => undefined);
    // The reaper must not keep the host alive, and a dead reaper must not crash the host (EPIPE).
    this.child.unref();
    (this.child.stdin as Socket).unref();
    this.child.stdin!.on('error', () => undefined);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  watch(pgid: number): void {
    this.send(`watch ${pgid}`);
  }

  unwatch(pgid: number): void {
    this.send(`unwatch ${pgid}`);
  }

  /** Ends the watch without touching the listed groups (clean host exit). */
  async release(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.ref(); // wait for the reaper's exit even when nothing else keeps the host alive
      this.child.stdin!.end('release\n');
      await this.exited;
    }
  }

  private send(line: string): void {
    if (this.child.stdin!.writable) this.child.stdin!.write(`${line}\n`);
  }
}

/** What a backend's spawn and end need of the reaper: the process groups it watches. */
export type ParentWatch = Pick<Reaper, 'watch' | 'unwatch'>;
