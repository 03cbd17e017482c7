// `hangar cluster …` and the commands that read or steer the cluster as a whole: nodes, rollouts, desired versions,
// and a node's cordon and drain.
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { cliIo } from '../cli-io.ts';
import { LOCAL_NODE } from '../../../shared/api.ts';
import { linkLostWords } from '../../../shared/cluster-link.ts';
import { showKey, statusNotes, statusText, trust, untrustedLines, untrust, writeNatsConfig, type Printed } from '../cluster-cli.ts';
import { desiredTable, nodesTable, pinSentence, replacedLine, rolloutTable, staleStoreNote } from '../format-cluster.ts';
import { registerJoinCommands } from '../join-cli.ts';
import { selectorOf } from '../nodes.ts';
import { homeDir } from '../paths.ts';
import { collect, type CliContext } from './context.ts';
import { followRollout, rolloutId, upgradeFailed } from './follow-rollout.ts';
import { confirm, print } from './terminal.ts';
import { HangarError } from '../../../shared/errors.ts';
import type { WireClient } from '../../../shared/wire-client.ts';

export function registerClusterCommands(context: CliContext): void {
  const home = () => homeDir(context.globals().home);
  const cluster = context.program.command('cluster').description('this host\'s cluster key and trust list, a nats-server configuration, and the link\'s status');

  registerJoinCommands(cluster, home);

  cluster.command('key').description('print this home\'s node id and public key (made on first use)').option('--json', 'print JSON to stdout')
    .action(async (options: { json?: boolean }) => printed(options, await showKey(home())));

  cluster.command('trust').description('list the viewer keys this node acts for, or add one').argument('[key]', 'a key `hangar cluster key` printed on the viewer')
    .option('--label <name>', 'a name to know the key by').option('--json', 'print JSON to stdout')
    .action(async (key: string | undefined, options: { json?: boolean; label?: string }) =>
      printed(options, await trust(home(), key, options.label)));

  cluster.command('untrust').description('stop acting for a viewer key').argument('<key>', 'the key, its id or its label')
    .option('--force', 'untrust the key of the cluster\'s admin too (its calls, pins and rollouts are refused from then on)').option('--json', 'print JSON to stdout')
    .action(async (which: string, options: { json?: boolean; force?: boolean }) => {
      const done = await untrust(home(), which, options.force);
      if (done.warning) cliIo().stderr.write(`hangar: ${done.warning}\n`);
      printed(options, done);
    });

  cluster.command('nats-config').description('write a nats-server configuration for the cluster and print how to start each agent')
    .requiredOption('--node <name=key>', 'a node: its name and the key (or node id) `hangar cluster key` printed there (repeatable)', collect, [])
    .option('--viewer <name[=key]>', 'a machine that calls the nodes, with its key to have each node trust it (repeatable; a node may be one too)', collect, [])
    .option('--admin <name>', 'a viewer (given with its key) that removes from the store, after an hour, what its key does not take (repeatable)', collect, [])
    .option('--out <file>', 'where to write the configuration', 'nats.conf')
    .option('--listen <host:port>', 'where nats-server listens (default: where --url says; a loopback URL on loopback)')
    .option('--url <url>', 'the address the agents join (default: nats://THIS_HOST:PORT, PORT from --listen or 4222)')
    .option('--store-dir <dir>', 'JetStream\'s directory (default: nats-store beside --out)')
    .option('--json', 'print JSON to stdout')
    .action(async (options: { node: string[]; viewer: string[]; admin: string[]; out: string; listen?: string; url?: string; storeDir?: string; json?: boolean }) => {
      const port = /:(\d+)$/.exec(options.listen ?? '')?.[1] ?? '4222';
      printed(options, await writeNatsConfig({
        nodes: options.node,
        viewers: options.viewer,
        admins: options.admin,
        out: options.out,
        listen: options.listen,
        url: options.url ?? `nats://${hostname()}:${port}`,
        storeDir: options.storeDir ?? join(dirname(resolve(options.out)), 'nats-store'),
      }));
    });

  context.clientCommand('status', 'what this host\'s cluster link dropped, refused, or was refused by the NATS server', (c) => c, { parent: cluster })
    .action(context.withClient(async (c, options: { json?: boolean }) => {
      const status = await c.clusterStatus({ node: LOCAL_NODE });
      print(options, status, () => statusText(status));
    }));

  context.clientCommand('nodes', 'list the cluster\'s nodes: status, access, labels, counts, drift, resources, last seen').action(context.withClient(async (c, options: { json?: boolean }) => {
    const [cards, status] = await Promise.all([c.nodes({ node: LOCAL_NODE }), c.clusterStatus({ node: LOCAL_NODE })]);
    const lost = status.role !== null && !status.link.connected ? `cluster connection lost: ${linkLostWords(status.link)}` : '';
    const refused = status.violations.at(-1) ? `the NATS server refused this host: ${status.violations.at(-1)!.message}` : '';
    print(options, cards, () => nodesTable(cards, [lost, refused].filter(Boolean).join('; ')) + statusNotes(status));
  }));

  context.clientCommand('rollouts', 'list the cluster\'s rolling upgrades and what each did on each node').action(context.withClient(async (c, options: { json?: boolean }) => {
    const [rollouts, status, cards] = await Promise.all([c.rollouts({ node: LOCAL_NODE }), c.clusterStatus({ node: LOCAL_NODE }), c.nodes({ node: LOCAL_NODE })]);
    print(options, rollouts, () => staleStoreNote(status) + (rollouts.map((r) => rolloutTable(r, cards)).join('\n') || 'no rollouts yet\n') + untrustedLines(status, 'rollouts'));
  }));

  context.clientCommand('resume', 'take over an interrupted rolling upgrade and go on where it stopped', (c) => c.requiredOption('--rollout <id>', 'the rollout (see hangar rollouts), or the first characters of its id'))
    .action(context.withClient(async (c, options: { json?: boolean; rollout: string }) => {
      const id = await rolloutId(c, options.rollout);
      await followRollout(c, options, () => c.resumeRollout({ node: LOCAL_NODE, id }), upgradeFailed);
    }));

  context.clientCommand('pin', 'record VERSION as the desired version of NAME on the nodes --on selects: they install or move to it by themselves', (c) =>
    c.argument('<name>').argument('<version>'), { sets: true, onDefault: 'every node' })
    .action(context.withClient(async (c, name: string, version: string, options: { json?: boolean; on?: string }) => {
      const on = await selectorOf(c, options.on);
      const before = (await c.desired({ node: LOCAL_NODE })).desired.find((d) => d.backend === name);
      const pinned = await c.pin({ node: LOCAL_NODE, name, version, on });
      const cards = await c.nodes({ node: LOCAL_NODE });
      print(options, pinned, () => `${pinSentence(pinned, cards)}: nodes that differ converge by themselves (hangar desired, hangar ls --on all)\n${replacedLine(before, pinned, cards)}`);
    }));

  context.clientCommand('unpin', 'clear the desired version of NAME: nodes keep what they run', (c) => c.argument('<name>'))
    .action(context.withClient(async (c, name: string, options: { json?: boolean }) => {
      await c.unpin({ node: LOCAL_NODE, name });
      print(options, { unpinned: name }, () => `${name} has no desired version any more\n`);
    }));

  context.clientCommand('desired', 'the cluster\'s desired versions, and each node that is not there yet and why').action(context.withClient(async (c, options: { json?: boolean }) => {
    const [view, status, cards] = await Promise.all([c.desired({ node: LOCAL_NODE }), c.clusterStatus({ node: LOCAL_NODE }), c.nodes({ node: LOCAL_NODE })]);
    print(options, view, () => staleStoreNote(status) + desiredTable(view, cards) + untrustedLines(status, 'desired'));
  }));

  context.clientCommand('cordon', 'keep every rollout and convergence off this node (see uncordon)').action(context.withClient(async (c, options: { json?: boolean }) => {
    const name = await refuseViewerOnly(c, context.node, 'cordoned');
    const view = await c.updateSettings({ node: context.node, settings: { cordoned: true } });
    const on = context.node === LOCAL_NODE ? '' : ` --on ${name}`;
    print(options, view.settings, () => `cordoned ${name}: no rollout or convergence touches it until hangar uncordon${on}\n`);
  }));

  context.clientCommand('uncordon', 'let rollouts and convergence touch this node again').action(context.withClient(async (c, options: { json?: boolean }) => {
    const name = await refuseViewerOnly(c, context.node, 'uncordoned');
    const view = await c.updateSettings({ node: context.node, settings: { cordoned: false } });
    print(options, view.settings, () => `uncordoned ${name}: rollouts and convergence touch it again\n`);
  }));

  context.clientCommand('drain', 'cordon this node, then stop every process it supervises (Free, then stop); lists them and asks first', (c) =>
    c.option('-y, --yes', 'do not ask for confirmation'))
    .action(context.withClient(async (c, options: { json?: boolean; yes?: boolean }) => {
      await refuseViewerOnly(c, context.node, 'drained');
      const running = await c.processes({ node: context.node });
      for (const p of running) cliIo().stderr.write(`will stop ${p.model} (${p.backend}, pid ${p.pid}, ${p.state})\n`);
      const what = running.length === 0 ? 'cordon this node (it runs no process)' : `cordon this node and stop ${running.length} process${running.length === 1 ? '' : 'es'}`;
      if (!options.yes && !(await confirm(`${what}? [y/N] `))) throw new HangarError('failed', 'not drained');
      const stopped = await c.drain({ node: context.node });
      print(options, { cordoned: true, stopped }, () => `drained: cordoned, ${stopped.length === 0 ? 'no process to stop' : `stopped ${stopped.join(', ')}`}\n`);
    }));
}

/**
 * A viewer-only host runs no backend for the cluster: no rollout or convergence touches it to be kept off. The node's
 * name, as the cluster shows it.
 */
async function refuseViewerOnly(c: WireClient, node: string, what: string): Promise<string> {
  const card = (await c.nodes({ node: LOCAL_NODE })).find((k) => (node === LOCAL_NODE ? k.self : k.id === node));
  if (card?.viewerOnly) {
    const { roleFrom } = await c.clusterStatus({ node: LOCAL_NODE });
    throw new HangarError('conflict', `${card.name} joined the cluster as a viewer only (${roleFrom ?? 'its role is viewer'}): it runs no backend for the cluster, so it is not ${what}`);
  }
  return card?.name ?? 'this node';
}

function printed(options: { json?: boolean }, result: Printed): void {
  print(options, result.json, () => result.text);
}
