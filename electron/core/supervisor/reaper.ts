// Parent watch. Backends run in their own process groups and sessions (so a stop can signal all of them), so a host
// that dies abruptly would orphan them. One small reaper per host, in its own session so a terminal's ^C to the
// host's group does not take it down too, holds the read end of a pipe from the host and the list of backend
// processes: pid, start time and cgroup of each. Pipe EOF without a prior "release" means the host died (SIGKILL,
// crash, exit without close()): the reaper ends every listed backend and exits. From one read of the process table
// (/proc under the linux platform layer; ps, with each process's leader mark, under posix) it first keeps only the
// listed processes whose pid is still theirs (the same start time) or names no process any more (then its group and
// session, if any members are left, are still its own: Linux gives no new process a pid that names a live group or
// session), and finds every member of their groups and sessions and every descendant of those by parent links: a
// backend's child that left the group with setsid is part of the backend, and once its parent dies it is re-parented
// and no later walk could find it (under posix, where no session is shown, the mark finds it). It sends SIGTERM to
// all of them (a whole group only while its leader still holds the pid: a freed pid may be given to a process that
// leads a group of that number before the signal lands) and to the members of their cgroups, waits a second, then sends SIGKILL to what is left, after
// checking each pid's start time again (a pid freed meanwhile may belong to someone else by then), kills each cgroup
// and removes it.
//
// Trade-off, chosen over `setpriv --pdeathsig`: pdeathsig fires on ANY parent exit, clean or not, and only on the
// process it is set on (not on what a backend forks). With the reaper, close({ stopAll: false }) sends "release" and
// adopted or kept-alive backends survive a clean exit, while an abrupt death still kills them. The price: a backend
// that survives its host loses its stdout/stderr pipes (later writes get EPIPE), and if the reaper itself is
// SIGKILLed, the watch is gone until the next host run re-adopts the backends.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { basename } from 'node:path';
import { MARK } from '../platform/process-groups.ts';
import type { Leader, PlatformName } from '../platform/types.ts';

// $1: the directory of the host's cgroups ('' when there are none); $2: the platform layer's name. Each listed
// process is " pid:start:cgroup ".
// plan prints "G pgid" for each listed group still its own, "P pid start" for each process of them; given a plan
// (as $1), it adds the plan's P lines whose pid still has the start time recorded there.
const script = `
trap '' HUP INT
base=$1
layer=$2
procs=' '
while read -r verb pid start cg; do
  case $verb in
    watch) procs="$procs$pid:$start:$cg " ;;
    unwatch) case $procs in *" $pid:"*) rest=\${procs#* $pid:}; procs="\${procs%% $pid:*} \${rest#* }" ;; esac ;;
    release) exit 0 ;;
  esac
done
# One line per process, "pid ppid pgrp session start" (session "-" where the OS shows none), in the start time's unit
# of the platform layer the host uses; and "M pid leader" for each process that carries a leader's mark.
table() {
  if [ "$layer" = posix ]; then
    LC_ALL=C TZ=UTC ps -A -o pid=,ppid=,pgid=,lstart= | awk '
      function epoch(mon, d, t, y,   m, yy, era, yoe, doe, h) {
        m = (index("JanFebMarAprMayJunJulAugSepOctNovDec", mon) + 2) / 3; yy = y - (m <= 2); era = int(yy / 400); yoe = yy - era * 400
        doe = yoe * 365 + int(yoe / 4) - int(yoe / 100) + int((153 * ((m + 9) % 12) + 2) / 5) + d - 1
        split(t, h, ":"); return (era * 146097 + doe - 719468) * 86400 + h[1] * 3600 + h[2] * 60 + h[3]
      }
      { printf "%s %s %s - %.0f\\n", $1, $2, $3, epoch($5, $6, $7, $8) }'
    LC_ALL=C ps axeww -o pid=,command= | awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^${MARK}=[0-9]+$/) print "M", $1, substr($i, ${MARK.length + 2}) }'
  else
    for f in /proc/[0-9]*/stat; do read -r l < "$f" && printf '%s\\n' "$l"; done 2>/dev/null | awk '{ pid = $1; sub(/.*\\) /, ""); print pid, $2, $3, $4, $20 }'
  fi
}
plan() {
  table | awk -v procs="$procs" -v earlier="$1" '
    $1 == "M" { mark[$2] = $3; next }
    { ppid[$1] = $2; pgrp[$1] = $3; sess[$1] = $4; st[$1] = $5 }
    END {
      n = split(procs, list, " ")
      for (i = 1; i <= n; i++) { split(list[i], f, ":"); g = f[1]; if (!(g in st) || st[g] == f[2]) ours[g] = 1; if ((g in st) && st[g] == f[2]) held[g] = 1 }
      for (p in ppid) { g = pgrp[p]; s = sess[p]; if ((g in ours) || (s in ours) || ((p in mark) && (mark[p] in ours))) keep[p] = 1 }
      do { grew = 0; for (p in ppid) if (!(p in keep) && (ppid[p] in keep)) { keep[p] = 1; grew = 1 } } while (grew)
      for (g in held) print "G", g
      for (p in keep) print "P", p, st[p]
      m = split(earlier, old, "\\n")
      for (i = 1; i <= m; i++) { split(old[i], f, " "); if (f[1] == "P" && (f[2] in st) && st[f[2]] == f[3]) print "P", f[2], f[3] }
    }'
}
signal() {
  printf '%s\\n' "$2" | while read -r kind id start; do
    case $kind in G) kill -"$1" -"$id" ;; P) kill -"$1" "$id" ;; esac
  done 2>/dev/null
}
cgroups() { for e in $procs; do cg=\${e##*:}; [ -n "$base" ] && [ "$cg" != - ] && printf '%s\\n' "$base/$cg"; done; }
first=$(plan '')
signal TERM "$first"
for cg in $(cgroups); do kill -TERM $(cat "$cg/cgroup.procs" 2>/dev/null) 2>/dev/null; done
sleep 1
signal KILL "$(plan "$first")"
for cg in $(cgroups); do
  echo 1 > "$cg/cgroup.kill" 2>/dev/null || kill -KILL $(cat "$cg/cgroup.procs" 2>/dev/null) 2>/dev/null
  i=0; while ! rmdir "$cg" 2>/dev/null && [ -d "$cg" ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done
done
`;

export class Reaper {
  private readonly child: ChildProcess;
  private readonly exited: Promise<unknown>;

  /** `cgroups`: the directory of the host's backend cgroups, if it has any; `layer`: the platform layer the host uses. */
  constructor(cgroups: string | null, layer: PlatformName) {
    this.child = spawn('/bin/sh', ['-c', script, 'reaper', cgroups ?? '', layer], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
    this.exited = once(this.child, 'exit').catch(() => undefined);
    // The reaper must not keep the host alive, and a dead reaper must not crash the host (EPIPE).
    this.child.unref();
    (this.child.stdin as Socket).unref();
    this.child.stdin!.on('error', () => undefined);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  watch(leader: Leader): void {
    this.send(`watch ${leader.pid} ${leader.startTime ?? '-'} ${leader.cgroup ? basename(leader.cgroup) : '-'}`);
  }

  unwatch(pid: number): void {
    this.send(`unwatch ${pid}`);
  }

  /** Ends the watch without touching the listed processes (clean host exit). */
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

/** What a backend's spawn and end need of the reaper: the processes it watches. */
export type ParentWatch = Pick<Reaper, 'watch' | 'unwatch'>;
