// `hangar localai …`: LocalAI run by the agent: installed from its releases, started, stopped, upgraded and rolled
// back, its state and its logs.
import { HangarError } from '../../../shared/errors.ts';
import { pastCancelText } from '../../../shared/localai-text.ts';
import type { LocalAiOperation, LocalAiRunView } from '../../../shared/types.ts';
import type { WireClient } from '../../../shared/wire-client.ts';
import type { CliContext } from './context.ts';
import { interruptible, operationInterruption, saying, startInterruption } from './localai-follow.ts';
import { linkLines } from './localai-links.ts';
import { print } from './terminal.ts';
import { wholeNumber } from '../typed-number.ts';

export function registerLocalAiCommands(context: CliContext): void {
  const group = context.program.command('localai').description("LocalAI run by Hangar: install, start, stop, restart, status, logs, upgrade, rollback, cancel");
  const sub = (name: string, description: string, configure?: Parameters<CliContext['clientCommand']>[2]) => context.clientCommand(name, description, configure, { parent: group });

  const operation = (kind: LocalAiOperation['kind'], work: (c: WireClient) => Promise<LocalAiRunView>) =>
    context.withClient(async (c, ...args: unknown[]) => {
      const options = args.at(-2) as { json?: boolean };
      const view = await interruptible(c, context.node, operationInterruption(c, context.node, kind), () => work(c));
      if (view) print(options, view, () => `${view.operation?.message ?? 'done'}\n`);
    });
  const install = (c: WireClient, version: string | undefined, as: 'install' | 'upgrade') => c.localaiInstall({ node: context.node, ...(version !== undefined && { version }), as });

  sub('install', "install LocalAI's release VERSION (vX.Y.Z, or latest: the default), its sha256 checked; over a running LocalAI, as a gated swap", (c) => c.argument('[version]'))
    .action((version: string | undefined, ...rest: unknown[]) => operation('install', (c) => install(c, version, 'install'))(...rest));

  sub('upgrade', 'upgrade LocalAI to VERSION (vX.Y.Z, or latest: the default): loaded models noted, LocalAI stopped, swapped, started, models loaded again; rolled back if any step fails', (c) => c.argument('[version]'))
    .action((version: string | undefined, ...rest: unknown[]) => operation('upgrade', (c) => install(c, version, 'upgrade'))(...rest));

  sub('rollback', 'go back to the LocalAI build kept before the last install, by the same gated swap')
    .action(operation('rollback', (c) => c.localaiRollback({ node: context.node })));

  sub('cancel', 'cancel the LocalAI install, upgrade or rollback under way, unless its swap has begun (then it goes on)')
    .action(context.withClient(async (c, options: { json?: boolean }) => {
      const answer = await c.localaiCancel({ node: context.node });
      if (!answer.cancelled) throw new HangarError('conflict', pastCancelText(answer));
      print(options, answer, () => `${answer.message}\n`);
    }));

  for (const action of ['start', 'stop', 'restart'] as const) {
    const says = { start: 'start LocalAI and wait until /readyz answers', stop: 'stop LocalAI (SIGINT, then SIGTERM, then SIGKILL)', restart: 'stop LocalAI, then start it and wait until /readyz answers' }[action];
    sub(action, says).action(context.withClient(async (c, options: { json?: boolean }) => {
      const control = () => c.localaiControl({ node: context.node, action });
      const view = action === 'stop' ? await saying(c, context.node, control) : await interruptible(c, context.node, startInterruption(c, context.node), control);
      if (view) print(options, view, () => statusText(view));
    }));
  }

  sub('status', 'where LocalAI stands: state, pid, version, url, and the links to a LocalAI server or cluster')
    .action(context.withClient(async (c, options: { json?: boolean }) => {
      const ref = { node: context.node };
      const [view, server, cluster] = await Promise.all([c.localaiRun(ref), c.localaiServer(ref), c.localaiSettings(ref)]);
      const links = linkLines(view, server, cluster);
      print(options, { ...view, server, cluster: cluster.status }, () => statusText(view, links));
    }));

  sub('logs', "LocalAI's last log lines", (c) => c.option('-n, --lines <count>', 'how many', wholeNumber, 200))
    .action(context.withClient(async (c, options: { json?: boolean; lines: number }) => {
      const lines = await c.localaiLogs({ node: context.node, lines: options.lines });
      print(options, lines, () => lines.map((l) => `${l}\n`).join(''));
    }));
}

/** `links`: how the links Hangar did not make by running LocalAI stand; with one, a missing LocalAI is no news. */
function statusText(view: LocalAiRunView, links: string[] = []): string {
  const lines = [`LocalAI: ${view.state}${view.pid !== null ? ` (pid ${view.pid})` : ''}${view.version ? `, ${view.version}` : ''}${view.url ? `, ${view.url}` : ''}`];
  if (view.state === 'not-installed' && links.length === 0) lines.push('install it: hangar localai install');
  if (view.state === 'crash-looping') lines.push('start it again: hangar localai start');
  if (view.binary) lines.push(`binary: ${view.binary}${view.fixedBinary ? ' (--localai-bin)' : ''}`);
  if (view.previousVersion) lines.push(`kept for a rollback: ${view.previousVersion} (hangar localai rollback)`);
  lines.push(`models: ${view.modelsPath}${view.pid !== null ? ` (${view.processes} model process${view.processes === 1 ? '' : 'es'} running)` : ''}`, `backends: ${view.backendsPath}`);
  if (view.link) lines.push(`link: ${view.link}`);
  if (view.restarts > 0 || view.lastExit) lines.push(`restarts after a crash: ${view.restarts}${view.lastExit ? ` (last end: ${view.lastExit})` : ''}`);
  const op = view.operation;
  // A cancel's message says it was cancelled, and how that left LocalAI; one under way says where it is.
  const said = op && (op.state === 'cancelled' && op.message ? op.message : op.state === 'running' ? `running (${op.phase})` : `${op.state}${op.message ? `: ${op.message}` : ''}`);
  if (op) lines.push(`last ${op.kind}: ${said}`);
  for (const m of view.marked) lines.push(`marked for upgrade by LocalAI's gallery since LocalAI ${m.since}: ${m.name} (${m.why})`);
  if (view.marked.length > 0) lines.push('upgrade them: hangar upgrade --all');
  lines.push(...links);
  return lines.join('\n') + '\n';
}
