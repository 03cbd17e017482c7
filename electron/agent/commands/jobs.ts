// `hangar jobs`, `cancel` and `wait`: a node's installs, upgrades, rollbacks and deletes; `hangar logs`: a model's output.
import { cliIo } from '../cli-io.ts';
import type { LogLine } from '../../../shared/types.ts';
import { jobsTable } from '../format.ts';
import type { CliContext } from './context.ts';
import { cancelledText, jobId, runJob } from './follow-job.ts';
import { print } from './terminal.ts';
import { HangarError } from '../../../shared/errors.ts';

export function registerJobCommands(context: CliContext): void {
  context.clientCommand('jobs', 'list this node\'s jobs (installs, upgrades, rollbacks, deletes): running ones with their progress, then how each ended')
    .action(context.withClient(async (c, options: { json?: boolean }) => {
      const jobs = await c.jobs({ node: context.node });
      print(options, jobs, () => jobsTable(jobs));
    }));

  context.clientCommand('cancel', 'cancel a running job (see hangar jobs): what it fetched is dropped and the installed backend is left as it was', (c) =>
    c.argument('<job>', 'a job id, or its first characters'))
    .action(context.withClient(async (c, text: string, options: { json?: boolean }) => {
      const id = await jobId(c, context.node, text);
      const asked = await c.cancelJob({ node: context.node, id });
      if (asked.finishedAt !== null) throw new HangarError('conflict', `the ${asked.kind} of ${asked.backend} already ended: ${asked.state}`);
      const final = await c.waitJob({ node: context.node, id });
      if (final.state !== 'cancelled') throw new HangarError('conflict', `the ${final.kind} of ${final.backend} was past the point where it can be cancelled, and ended: ${final.state}`);
      print(options, final, () => `${cancelledText(final)}\n`);
    }));

  context.clientCommand('wait', 'follow a job (see hangar jobs) until it ends, with its progress', (c) => c.argument('<job>', 'a job id, or its first characters'))
    .action(context.withClient(async (c, text: string, options: { json?: boolean }) => {
      const id = await jobId(c, context.node, text);
      await runJob(context, c, options, async () => (await c.jobs({ node: context.node })).find((j) => j.id === id) ?? c.waitJob({ node: context.node, id }), { onInterrupt: 'stop following' });
    }));

  context.clientCommand('logs', 'print the recent output of MODEL', (c) => c.argument('<model>').option('-f, --follow', 'keep printing new lines'))
    .action(context.withClient(async (c, model: string, options: { json?: boolean; follow?: boolean }) => {
      const show = (line: LogLine) => cliIo().stdout.write(options.json ? JSON.stringify(line) + '\n' : `${line.at} ${line.text}\n`);
      if (options.follow) c.onEvent((e) => e.type === 'log' && e.node === context.node && e.line.model === model && show(e.line));
      (await c.logs({ node: context.node, model })).forEach(show);
      if (options.follow) await c.closed;
    }));
}
