// How a command that starts or follows a job shows its progress on stderr, says how it ended, and answers Ctrl-C.
import { cliIo } from '../cli-io.ts';
import { LOCAL_NODE } from '../../../shared/api.ts';
import type { JobView } from '../../../shared/types.ts';
import type { WireClient } from '../../../shared/wire-client.ts';
import { jobEndText, jobLine, table } from '../format.ts';
import { pickId } from '../id-prefix.ts';
import type { CliContext } from './context.ts';
import { forTerminal, print } from './terminal.ts';
import { HangarError } from '../../../shared/errors.ts';

/** What Ctrl-C does while a job is followed: cancel the job (as the UI's Cancel does), or only stop following it. */
type InterruptMode = 'cancel' | 'stop following';

/** Set by the first Ctrl-C: a command that acts on several nodes starts nothing more. */
let interrupted = false;

/**
 * Starts a job, shows its progress on stderr, and prints how it ended on stdout ("done", "up to date", "already
 * installed"); a job that fails fails the command. A job cancelled by this command's own Ctrl-C exits 130.
 */
export async function runJob(context: CliContext, c: WireClient, options: { json?: boolean }, start: () => Promise<JobView>, follow: { onInterrupt?: InterruptMode } = {}): Promise<void> {
  const final = await followJob(c, start, context.node, follow.onInterrupt);
  if (final.state === 'cancelled' && interrupted) {
    cliIo().setExitCode(130);
    return;
  }
  // A job that failed for what it was given (a checksum, an archive) exits as that kind of failure.
  if (final.state !== 'done') throw new HangarError(final.errorCode ?? 'failed', final.error ?? `${final.kind} ${final.backend} ${final.state}`);
  const swapped = !options.json && final.phase === 'done' && final.kind !== 'delete';
  const version = swapped ? ((await c.backends({ node: context.node })).find((b) => b.name === final.backend)?.version ?? null) : null;
  print(options, final, () => `${jobEndText(final, version)}\n`);
}

/** One node: runJob. A set: the job on each online node in turn, past failures, then a line per node. */
export async function runJobs(context: CliContext, c: WireClient, options: { json?: boolean }, start: (node: string) => Promise<JobView>): Promise<void> {
  if (!context.targets) return runJob(context, c, options, () => start(context.node));
  const results: Array<{ node: string; id: string; result: string; reason: string | null }> = [];
  for (const { node: on, card } of context.targets) {
    const row = { node: card.name, id: card.id, result: 'skipped', reason: null as string | null };
    if (interrupted) row.reason = 'interrupted';
    else if (card.status !== 'online') row.reason = `offline: ${card.reason ?? 'no heartbeat'}`;
    else {
      cliIo().stderr.write(forTerminal(`${card.name} (${card.id}):\n`));
      const final = await followJob(c, () => start(on), on).catch((error: Error) => error);
      // A job that had nothing to do ends done in a phase that says so ('already installed', 'up to date').
      row.result = final instanceof Error ? 'failed' : final.state === 'done' ? final.phase : final.state;
      row.reason = final instanceof Error ? final.message : final.error;
    }
    results.push(row);
  }
  print(options, results, () => table(results, 'no nodes'));
  if (results.some((r) => r.result === 'failed')) cliIo().setExitCode(1);
  if (interrupted) cliIo().setExitCode(130);
}

/**
 * Starts a job and shows its progress on stderr until it ends. The first Ctrl-C cancels the job and waits to say
 * how it ended (or, following only, stops following); a second leaves it running and says how to follow it.
 */
async function followJob(c: WireClient, start: () => Promise<JobView>, on: string, onInterrupt: InterruptMode = 'cancel'): Promise<JobView> {
  // Every event of a job that arrives before its id does: a fast job may be past a phase by then, and each is shown.
  const early = new Map<string, JobView[]>();
  let job: JobView | null = null;
  let presses = 0;
  let last = '';
  const { stderr } = cliIo();
  const show = (view: JobView) => {
    // How it ended is the command's own last word, on stdout.
    if (view.finishedAt !== null) return;
    const line = forTerminal(jobLine(view));
    if (line === last) return;
    last = line;
    stderr.write(stderr.isTTY ? `\r\x1b[K${line}` : `${line}\n`);
  };
  const say = (line: string) => stderr.write(`${stderr.isTTY ? '\r\x1b[K' : ''}hangar: ${forTerminal(line)}\n`);
  const cancel = (view: JobView) => {
    say(`cancelling the ${view.kind} of ${view.backend}… (Ctrl-C again leaves it running)`);
    c.cancelJob({ node: on, id: view.id }).catch((error: Error) => say(`could not cancel it: ${error.message}`));
  };
  const interrupt = () => {
    presses++;
    interrupted = true;
    if (job === null) {
      if (presses > 1) process.exit(130); // nothing known to cancel or follow yet
      return;
    }
    if (onInterrupt === 'stop following') {
      say(`stopped following; the ${job.kind} of ${job.backend} goes on (job ${job.id})`);
      process.exit(130);
    }
    if (presses === 1) return cancel(job);
    say(leftRunningText(job, on));
    process.exit(130);
  };
  const off = c.onEvent((e) => {
    if (e.type !== 'job') return;
    if (job === null) early.set(e.job.id, [...(early.get(e.job.id) ?? []), e.job]);
    else if (e.job.id === job.id) show(e.job);
  });
  process.on('SIGINT', interrupt);
  try {
    job = await start();
    // The reply is the job as it was created; what it did since came as events.
    for (const view of [job, ...(early.get(job.id) ?? [])]) show(view);
    early.clear();
    if (presses === 1 && onInterrupt === 'cancel') cancel(job);
    const final = await c.waitJob({ node: on, id: job.id });
    if (presses > 0 && onInterrupt === 'cancel') {
      say(final.state === 'cancelled' ? cancelledText(final) : `the ${final.kind} of ${final.backend} was past the point where it can be cancelled, and ended: ${final.state}`);
    }
    if (final.notice) say(`note: ${final.notice}`);
    return final;
  } finally {
    process.off('SIGINT', interrupt);
    // Once Ctrl-C was pressed the command is on its way out: another press must not kill it before it says how.
    if (presses > 0) process.on('SIGINT', () => undefined);
    off();
    if (stderr.isTTY) stderr.write('\r\x1b[K');
  }
}

/** What a cancelled install or upgrade leaves: it stops before its swap, so the live tree is as it was. */
export function cancelledText(job: JobView): string {
  return `cancelled the ${job.kind} of ${job.backend}; the live tree is untouched`;
}

function leftRunningText(job: JobView, on: string): string {
  const where = on === LOCAL_NODE ? '' : ` --on ${on}`;
  return `left the ${job.kind} of ${job.backend} running (job ${job.id}): \`hangar wait ${job.id}${where}\` follows it, \`hangar cancel ${job.id}${where}\` cancels it`;
}

/** A job id from `hangar jobs`, or the first characters of one; a job pruned from the list by its full id. */
export async function jobId(c: WireClient, node: string, text: string): Promise<string> {
  return pickId((await c.jobs({ node })).map((j) => j.id), text, { plural: 'jobs', list: 'hangar jobs' });
}
