// Loaded before each test file (scripts/test.mjs). A file whose tests failed part-way may end before its cleanup ran:
// its agents, nats-servers and backends would outlive it, holding ports and directories the next files use, and a
// stale backend of a dead file is then seen by another file's scan. At its exit, every process it left running below it
// is killed (a group it leads, whole) and named on stderr. tsx's esbuild service is its own, and left to end with it.
import { execFileSync } from 'node:child_process';

process.once('exit', () => {
  const ps = ['-A', '-o', 'pid=,ppid=,pgid=,args='];
  let table;
  try {
    table = execFileSync('ps', ps, { encoding: 'utf8', timeout: 5000 });
  } catch {
    return; // no ps here: nothing is known of what is left
  }
  const rows = table.split('\n').map((line) => /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(.*)$/.exec(line)).filter(Boolean)
    .map(([, pid, ppid, pgid, args]) => ({ pid: Number(pid), ppid: Number(ppid), pgid: Number(pgid), args }));
  const left = [];
  const below = (parent) => {
    for (const row of rows.filter((r) => r.ppid === parent)) {
      if (parent === process.pid && (/esbuild/.test(row.args) || row.args === `ps ${ps.join(' ')}`)) continue;
      // Ended, not yet reaped: nothing runs.
      if (row.args.endsWith('<defunct>')) continue;
      left.push(row);
      below(row.pid);
    }
  };
  below(process.pid);
  if (left.length === 0) return;
  for (const { pid, pgid } of left) {
    try {
      process.kill(pgid === pid ? -pid : pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  const file = process.argv.find((arg) => arg.endsWith('.test.ts')) ?? 'the test run';
  process.stderr.write(`test: ${file} left ${left.length} process(es) running at its end, killed: ${left.map((r) => `${r.pid} (${r.args.slice(0, 80)})`).join('; ')}\n`);
});
