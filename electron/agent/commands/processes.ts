// The commands on a node's backend processes: load, respawn, restart, unload and stop a model's process, clear what
// LocalAI left behind, and list processes, resources and what runs from the backends directory.
import { Argument, CommanderError } from 'commander';
import { cliIo } from '../cli-io.ts';
import { wholeNumber } from '../typed-number.ts';
import type { LeftoverAction } from '../../../shared/api.ts';
import { HangarError } from '../../../shared/errors.ts';
import type { RestartPolicy } from '../../../shared/types.ts';
import { listingFailed, processVram, psJson, psRow, resourcesRow, resourcesText, runByText, scanJson, table, unansweredLines } from '../format.ts';
import type { Target } from '../nodes.ts';
import type { CliContext } from './context.ts';
import { confirm, print } from './terminal.ts';

interface LoadCommandOptions {
  json?: boolean;
  restart?: string;
  restartDelay?: number;
  maxRestarts?: number;
  startTimeout?: number;
}

export function registerProcessCommands(context: CliContext): void {
  context.clientCommand('load', 'ensure a fresh process for MODEL on backend NAME and load it', (c) =>
    c
      .argument('<name>')
      .argument('<model>')
      .option('--restart <policy>', 'when its process ends by itself: never, on-failure (default) or always')
      .option('--restart-delay <time>', 'wait before a restart when the process ended within 10 s of its start three times in a row, doubling with each further one (e.g. 500ms, 2s; default 1s); the first two such ends, and a process that ran longer, restart at once', parseDelay)
      .option('--max-restarts <n>', 'ends within 10 s of a start, in a row, that leave it crash-looping (default 5)', wholeNumber)
      .option('--start-timeout <seconds>', 'how long its start and its load may take (default: the node\'s start-timeout); never less than twice the longest seen here', wholeNumber))
    .action(context.withClient(async (c, backend: string, model: string, options: LoadCommandOptions) => {
      // The agent checks the policy and the numbers against the contract's schema, as every request.
      const result = await c.load({
        node: context.node,
        backend,
        model,
        ...(options.restart !== undefined && { restart: options.restart as RestartPolicy }),
        ...(options.restartDelay !== undefined && { restartDelayMs: options.restartDelay }),
        ...(options.maxRestarts !== undefined && { maxRestarts: options.maxRestarts }),
        ...(options.startTimeout !== undefined && { startTimeoutMs: options.startTimeout * 1000 }),
      });
      print(options, result, () => `${result.message}\npid ${result.pid}, port ${result.port}${result.reused ? ' (reused)' : ''}\n`);
    }));

  context.clientCommand('respawn', 'force a fresh process for MODEL (or every process of --backend NAME)', (c) => c.argument('[model]').option('--backend <name>'))
    .action(context.withClient(async (c, model: string | undefined, options: { json?: boolean; backend?: string }) => {
      if (options.backend) {
        const processes = await c.respawnBackend({ node: context.node, name: options.backend });
        return print(options, processes.map(psJson), () => processes.map((p) => `respawned ${p.model}: pid ${p.pid}\n`).join('') || 'no processes\n');
      }
      if (!model) throw new CommanderError(2, 'hangar.usage', 'respawn needs a MODEL or --backend NAME');
      const p = await c.respawn({ node: context.node, model });
      print(options, psJson(p), () => `respawned ${p.model} (run by ${runByText(p)}): pid ${p.pid}, port ${p.port}${p.message ? ` (${p.message})` : ''}\n`);
    }));

  context.clientCommand('restart', 'start the process of MODEL again (exited, crashed or running) and reload the model', (c) => c.argument('<model>'))
    .action(context.withClient(async (c, model: string, options: { json?: boolean }) => {
      const p = await c.restart({ node: context.node, model });
      print(options, psJson(p), () => `restarted ${p.model}: pid ${p.pid}, port ${p.port}${p.error ? `\n${p.error}` : ''}\n`);
    }));

  context.clientCommand('unload', "free MODEL's memory: Hangar's process stays for the next load; LocalAI's model is stopped (its /backend/shutdown)", (c) => c.argument('<model>'))
    .action(context.withClient(async (c, model: string, options: { json?: boolean }) => {
      const p = await c.unload({ node: context.node, model });
      const how = p.runBy === 'localai' ? 'LocalAI stopped it' : `its process (pid ${p.pid}) stays for the next load`;
      print(options, psJson(p), () => `unloaded ${p.model} (run by ${runByText(p)}): ${how}\n`);
    }));

  context.clientCommand('stop', 'stop the process serving MODEL', (c) => c.argument('<model>'))
    .action(context.withClient(async (c, model: string, options: { json?: boolean }) => {
      await c.stop({ node: context.node, model });
      print(options, { stopped: model }, () => `stopped ${model}\n`);
    }));

  context.clientCommand('leftover', 'restore (a backup of a backend that is gone) or delete a working directory LocalAI left behind', (c) =>
    c.argument('<name>', 'as ls lists it, e.g. NAME.install-backup').addArgument(new Argument('<action>').choices(['restore', 'delete'])))
    .action(context.withClient(async (c, name: string, action: LeftoverAction, options: { json?: boolean }) => {
      await c.resolveLeftover({ node: context.node, name, action });
      print(options, { [action === 'restore' ? 'restored' : 'deleted']: name }, () => `${action === 'restore' ? 'restored' : 'deleted'} ${name}\n`);
    }));

  context.clientCommand('stop-process', 'stop one process a scan shows: supervised, or stale and not started by Hangar', (c) =>
    c.argument('<pid>', 'process id (see hangar scan)').option('-y, --yes', 'do not ask for confirmation'))
    .action(context.withClient(async (c, pidText: string, options: { json?: boolean; yes?: boolean }) => {
      const pid = Number(pidText);
      if (!/^\d+$/.test(pidText) || !Number.isSafeInteger(pid)) throw new CommanderError(2, 'hangar.usage', `stop-process wants a PID, got "${pidText}"`);
      const found = (await c.scan({ node: context.node })).find((entry) => entry.pid === pid);
      if (!found) throw new HangarError('not-found', `pid ${pid} is not a process of this node's backends (see hangar scan)`);
      const what = `pid ${pid} (${found.command || 'no command line'})`;
      if (!options.yes && !(await confirm(`stop ${what}? [y/N] `))) throw new HangarError('failed', `${what} was not stopped`);
      await c.stopProcess({ node: context.node, pid });
      print(options, { stopped: pid, command: found.command }, () => `stopped ${what}\n`);
    }));

  context.clientCommand('ps', 'list backend processes with their cwd status (--on all or --on A,B: every node\'s, in one table)', undefined, { sets: true })
    .action(context.withClient(async (c, options: { json?: boolean }) => {
      // The VRAM column, where a node's tool reports GPU memory per process (the JSON has its own: hangar resources).
      const vramOn = (n: string) => (options.json ? Promise.resolve(null) : c.resources({ node: n }).then(processVram, () => null));
      if (context.targets) {
        const online = (t: Target) => t.card.status === 'online';
        const [listed, vrams] = await Promise.all([
          Promise.all(context.targets.map((t) => (online(t) ? c.processes({ node: t.node }).catch((e: Error) => e) : null))),
          Promise.all(context.targets.map((t) => (online(t) ? vramOn(t.node) : null))),
        ]);
        const answers = context.targets.map((t, i) => ({ card: t.card, answer: listed[i] ?? null }));
        const json = answers.map(({ card, answer }) => ({
          node: card.id, name: card.name, status: card.status,
          error: answer instanceof Error ? answer.message : null,
          processes: Array.isArray(answer) ? answer.map(psJson) : null,
        }));
        const runBy = answers.some(({ answer }) => Array.isArray(answer) && answer.some((p) => p.runBy));
        const anyVram = vrams.some((v) => v !== null);
        const rows = answers.flatMap(({ card, answer }, i) => (Array.isArray(answer) ? answer.map((p) => ({ node: card.name, ...psRow(p, runBy, anyVram ? vrams[i] : undefined) })) : []));
        print(options, json, () => table(rows, 'no backend processes on any node', unansweredLines(answers)));
        if (listingFailed(answers)) cliIo().setExitCode(1);
        return;
      }
      const [processes, vram] = await Promise.all([c.processes({ node: context.node }), vramOn(context.node)]);
      const runBy = processes.some((p) => p.runBy);
      print(options, processes.map(psJson), () => table(processes.map((p) => psRow(p, runBy, vram ?? undefined)), 'no backend processes'));
    }));

  context.clientCommand('resources', 'the node\'s CPUs, memory, disk and GPUs, and the GPU memory each supervised process holds (--on all: one table)', undefined, { sets: true })
    .action(context.withClient(async (c, options: { json?: boolean }) => {
      if (context.targets) {
        const read = await Promise.all(context.targets.map((t) => (t.card.status === 'online' ? c.resources({ node: t.node }).catch((e: Error) => e) : null)));
        const answers = context.targets.map((t, i) => ({ card: t.card, answer: read[i] ?? null }));
        const json = answers.map(({ card, answer }) => ({ node: card.id, name: card.name, status: card.status, error: answer instanceof Error ? answer.message : null, resources: answer instanceof Error ? null : answer }));
        const rows = answers.flatMap(({ card, answer }) => (answer && !(answer instanceof Error) ? [resourcesRow(card.name, answer)] : []));
        print(options, json, () => table(rows, 'no node answered', unansweredLines(answers)));
        if (listingFailed(answers)) cliIo().setExitCode(1);
        return;
      }
      const r = await c.resources({ node: context.node });
      print(options, r, () => resourcesText(r));
    }));

  context.clientCommand('scan', 'find every process whose cwd is or was inside the backends directory').action(context.withClient(async (c, options: { json?: boolean }) => {
    const [found, supervised] = await Promise.all([c.scan({ node: context.node }), c.processes({ node: context.node })]);
    const rows = found.map((entry) => scanJson(entry, supervised));
    print(options, rows, () => table(rows, 'no process runs from the backends directory'));
  }));
}

/** "500ms", "2s" or a number of milliseconds. */
function parseDelay(value: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s)?$/.exec(value.trim());
  if (!match) throw new CommanderError(2, 'hangar.usage', `--restart-delay wants a time such as 500ms or 2s, got "${value}"`);
  return Math.round(Number(match[1]) * (match[2] === 's' ? 1000 : 1));
}

