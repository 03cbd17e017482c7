// The commands that install and swap backends: the gallery, what is installed (`ls`, `info`), install, upgrade,
// rollback and delete.
import { CommanderError, type Command } from 'commander';
import { cliIo } from '../cli-io.ts';
import { typedNumber } from '../typed-number.ts';
import { LOCAL_NODE } from '../../../shared/api.ts';
import { followedByName } from '../../../shared/gallery-sources.ts';
import { galleryJson, infoText, listingFailed, lsJson, lsProcess, lsStatus, matrix, matrixJson, table, unansweredLines, upgradesUnknownLines, upgradeText } from '../format.ts';
import { selectorOf } from '../nodes.ts';
import type { CliContext } from './context.ts';
import { runJob, runJobs } from './follow-job.ts';
import { followRollout, rollbackFailed, rolloutId, upgradeFailed } from './follow-rollout.ts';
import { forTerminal, print } from './terminal.ts';

export function registerBackendCommands(context: CliContext): void {
  context.clientCommand('gallery', 'list gallery entries (--on all --refresh: re-read every node\'s galleries)', (c) => c.option('--refresh', 're-read galleries and registry digests'), { sets: true })
    .action(context.withClient(async (c, options: { json?: boolean; refresh?: boolean }) => {
      if (context.targets) {
        const listed = await Promise.all(context.targets.map((t) => (t.card.status === 'online' ? c.gallery({ node: t.node, refresh: options.refresh === true }).catch((e: Error) => e) : null)));
        const answers = context.targets.map((t, i) => ({ card: t.card, answer: listed[i] ?? null }));
        const rows = answers.filter((a) => Array.isArray(a.answer)).map(({ card, answer }) => ({ node: card.name, entries: (answer as unknown[]).length, ...(options.refresh && { refreshed: 'now' }) }));
        print(options, answers.map(({ card, answer }) => ({ node: card.id, name: card.name, entries: Array.isArray(answer) ? answer.map(galleryJson) : null, error: answer instanceof Error ? answer.message : null })),
          () => table(rows, 'no node answered', unansweredLines(answers)));
        if (answers.some((a) => !Array.isArray(a.answer))) cliIo().setExitCode(1);
        return;
      }
      const entries = await c.gallery({ node: context.node, refresh: options.refresh === true });
      const { galleryProblems } = await c.info({ node: context.node });
      for (const problem of galleryProblems) cliIo().stderr.write(`hangar: warning: ${forTerminal(problem.message)}\n`);
      if (entries.length === 0 && galleryProblems.length > 0) cliIo().setExitCode(1);
      // Only the entry a name's backend follows can be installed or upgradable; the others are other sources of it.
      const followed = followedByName(entries);
      const status = (e: (typeof entries)[number]) => {
        const first = followed.get(e.name.toLowerCase())!;
        if (first !== e) return `another source (${e.name} follows ${first.gallery})`;
        return e.upgradable ? 'upgradable' : e.installed ? 'installed' : e.compatible ? '' : 'incompatible';
      };
      print(options, entries.map(galleryJson), () =>
        table(entries.map((e) => ({
          name: e.name,
          gallery: e.gallery,
          version: e.version,
          status: status(e),
          resolves: e.meta ? (e.meta.resolves ? `→ ${e.meta.resolves} (${e.meta.capability})` : 'no build for this machine') : '',
        })), 'the gallery is empty'),
      );
    }));

  context.clientCommand('ls', 'list installed backends (--on all or --on A,B: a backend × node matrix)', undefined, { sets: true }).action(context.withClient(async (c, options: { json?: boolean }) => {
    if (context.targets) {
      const [listed, desired] = await Promise.all([
        Promise.all(context.targets.map((t) => (t.card.status === 'online' ? c.backends({ node: t.node }).catch((e: Error) => e) : null))),
        c.desired({ node: LOCAL_NODE }),
      ]);
      const columns = context.targets.map((t, i) => ({ card: t.card, backends: listed[i] ?? null }));
      print(options, matrixJson(columns, desired), () => matrix(columns, desired));
      if (listingFailed(columns.map((c) => ({ answer: c.backends })))) cliIo().setExitCode(1);
      return;
    }
    const backends = await c.backends({ node: context.node });
    print(options, backends.map(lsJson), () =>
      table(backends.map((b) => ({
        name: b.name,
        version: b.upgradable ? upgradeText(b.version, b.availableVersion) : b.version,
        processes: b.processes.map(lsProcess).join(' ') || '-',
        status: lsStatus(b),
      })), 'no backends installed (try: hangar gallery, then hangar install NAME)', upgradesUnknownLines(backends)),
    );
  }));

  context.clientCommand('info', 'this node: where it lives, what it runs on, and how a stop finds all of a backend\'s processes').action(context.withClient(async (c, options: { json?: boolean }) => {
    const info = await c.info({ node: context.node });
    print(options, info, () => infoText(info));
  }));

  context.clientCommand('install', 'install a backend from the gallery (on each node of --on all or --on A,B)', (c) =>
    gated(swapping(c.argument('<name>', 'name or gallery@name').option('--force', 'reinstall when already installed'))), { sets: true })
    .action(context.withClient((c, name: string, options: SwapCommandOptions & { force?: boolean }) =>
      runJobs(context, c, options, (on) => c.install({ node: on, name, force: options.force === true, ...swapOptions(options) }))));

  context.clientCommand('upgrade', 'upgrade a backend (or --all); with --on all (or label:KEY=VALUE, or A,B), a rolling upgrade across those nodes', (c) =>
    gated(swapping(c.argument('[name]').option('--all', 'upgrade every upgradable backend').option('--max-parallel <n>', 'with --on all: nodes upgraded at once', parseCount, 1)
      .option('--to <version>', 'with --on all: the version to bring every node to (default: the one their galleries offer)'))), { sets: true })
    .action(context.withClient(async (c, name: string | undefined, options: SwapCommandOptions & { all?: boolean; maxParallel: number; on?: string; to?: string }) => {
      if (context.targets) {
        if (!name || options.all) throw new CommanderError(2, 'hangar.usage', 'a rolling upgrade needs one NAME');
        const on = await selectorOf(c, options.on);
        return followRollout(c, options, () => c.rollout({ node: LOCAL_NODE, name, maxParallel: options.maxParallel, on, ...(options.to && { version: options.to }) }), upgradeFailed);
      }
      if (options.all) {
        const results = await c.upgradeAll({ node: context.node });
        print(options, results, () => table(results.map((r) => ({ backend: r.backend, result: r.ok ? 'upgraded' : r.error })), 'nothing to upgrade'));
        if (results.some((r) => !r.ok)) cliIo().setExitCode(1);
        return;
      }
      if (!name) throw new CommanderError(2, 'hangar.usage', 'upgrade needs a NAME or --all');
      await runJob(context, c, options, () => c.upgrade({ node: context.node, name, ...swapOptions(options) }));
    }));

  context.clientCommand('rollback', 'swap back to the previous version (--rollout ID: on every node that rollout upgraded)', (c) =>
    gated(swapping(c.argument('[name]').option('--rollout <id>', 'roll back the nodes a rolling upgrade upgraded (its id, or the first characters of it)'))))
    .action(context.withClient(async (c, name: string | undefined, options: SwapCommandOptions & { rollout?: string }) => {
      if (options.rollout) {
        const id = await rolloutId(c, options.rollout);
        return followRollout(c, options, () => c.rollbackRollout({ node: LOCAL_NODE, id }), rollbackFailed);
      }
      if (!name) throw new CommanderError(2, 'hangar.usage', 'rollback needs a NAME or --rollout ID');
      await runJob(context, c, options, () => c.rollback({ node: context.node, name, ...swapOptions(options) }));
    }));

  context.clientCommand('delete', 'delete an installed backend (from each node of --on all or --on A,B)', (c) => swapping(c.argument('<name>')), { sets: true })
    .action(context.withClient((c, name: string, options: SwapCommandOptions) => runJobs(context, c, options, (on) => c.delete({ node: on, name, ...swapOptions(options) }))));
}

function parseCount(value: string): number {
  const n = typedNumber(value);
  if (!Number.isInteger(n) || n < 1 || n > 20) throw new CommanderError(2, 'hangar.usage', `--max-parallel wants 1 to 20, got "${value}"`);
  return n;
}

interface SwapCommandOptions {
  json?: boolean;
  stopUnsupervised?: boolean;
  /** false with --no-smoke-start (commands without the option never set it). */
  smokeStart?: boolean;
}

/** The option every command that swaps or removes a backend directory takes. */
function swapping(command: Command): Command {
  return command.option('--stop-unsupervised', 'also stop processes Hangar did not start that run from the backend directory (default: leave them running and name them)');
}

/** The option of the commands whose swap is health-gated. */
function gated(command: Command): Command {
  return command.option('--no-smoke-start', 'when no process of the backend runs to be respawned, do not start the new build once to check it answers Health before the job is done (default: the node\'s smoke-start setting)');
}

function swapOptions(options: SwapCommandOptions): { stopUnsupervised?: boolean; smokeStart?: boolean } {
  return { ...(options.stopUnsupervised && { stopUnsupervised: true }), ...(options.smokeStart === false && { smokeStart: false }) };
}
