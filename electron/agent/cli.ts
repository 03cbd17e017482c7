import { once } from 'node:events';
import { createInterface } from 'node:readline/promises';
import { Argument, Command, CommanderError } from 'commander';
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { LOCAL_NODE, type LeftoverAction } from '../../shared/api.ts';
import type { ClusterRole, JobView, LogLine, RestartPolicy, RolloutNode, RolloutView } from '../../shared/types.ts';
import type { WireClient } from '../../shared/wire-client.ts';
import { DEFAULT_CALL_TIMEOUT_MS, DEFAULT_HEARTBEAT_MS } from '../cluster/defaults.ts';
import { parseLabel } from '../../shared/selector.ts';
import { namesASet, resolveNode, resolveTargets, selectorOf, type Target } from './nodes.ts';
import { HomeBusyError } from '../core/home-lock.ts';
import { localaiHostOptions, localaiOptions, localaiServerOptions, type LocalAiCommandOptions } from './localai-options.ts';
import { showKey, statusNotes, statusText, trust, untrustedLines, untrust, writeNatsConfig, type Printed } from './cluster-cli.ts';
import { connect } from './connect.ts';
import { followedByName } from '../../shared/gallery-sources.ts';
import {
  desiredTable, galleryJson, infoText, jobEndText, jobLine, jobsTable, lsJson, lsProcess, lsStatus, matrix, matrixJson, nodesTable, processVram, psJson, psRow, resourcesRow, resourcesText, rolloutTable, runByText, scanJson, staleStoreNote, table,
  unansweredLines, upgradesUnknownLines, upgradeText,
} from './format.ts';
import { DEFAULT_LISTEN, homeDir } from './paths.ts';
import { backendStartTimeoutPatch, editedGalleries, galleriesTable, galleryLocationProblem, settingPatch, settingsKeys, settingsTable } from './settings-cli.ts';

/** The node the running command acts on, from `--on` (one command per process). */
let node: string = LOCAL_NODE;
/** The nodes it acts on when `--on` names a set (`all`, or a comma list); null for one node. */
let targets: Target[] | null = null;
/** Commands whose `--on` may name a set of nodes. */
const acceptsSets = new Set<string>();

interface GlobalOptions {
  node?: string;
  token?: string;
  home?: string;
}

const program = new Command('hangar')
  .description('Hangar: install, upgrade and supervise local AI inference backends')
  .option('--node <url>', 'agent to talk to (default: the agent running on --home)')
  .option('--token <token>', 'agent token (default: $HANGAR_TOKEN, then <home>/state/token)')
  .option('--home <dir>', 'Hangar home (default: $HANGAR_HOME or the platform data dir)')
  .enablePositionalOptions()
  .showHelpAfterError('(run hangar --help for usage)')
  .exitOverride();

localaiOptions(program
  .command('agent')
  .description('run a node and serve it over HTTP + WebSocket (127.0.0.1 only unless --listen says otherwise)')
  .option('--home <dir>', 'Hangar home')
  .option('--gallery <pathOrUrl>', 'a backend gallery index.yaml, NAME=PATH_OR_URL to name it (repeatable; default: the starter gallery)', collect, [])
  .option('--listen <host:port>', 'address to bind; port 0 picks a free one', DEFAULT_LISTEN)
  .option('--token <token>', 'token clients must present, at least 16 characters (visible in the process list: prefer --token-file)')
  .option('--token-file <file>', 'read the token from a file (default: $HANGAR_TOKEN, then <home>/state/token, created on first run)')
  .option('--auto-upgrade', 'upgrade backends as soon as the gallery offers a newer version (default: the node\'s settings)', false)
  .option('--ports <from-to>', 'port range for backends (default 30100-30999)')
  .option('--max-install-size <size>', 'what one backend may hold on disk, e.g. 64G (default 32G)')
  .option('--start-timeout <seconds>', 'how long a backend\'s start and a model\'s load may take, never less than twice the longest seen here (default: the node\'s settings, 600)')
  .option('--stall-timeout <seconds>', 'give up on a download that sends no headers, or under 1 KiB, for this long (default 30)')
  .option('--cluster <url>', 'join the NATS cluster at nats://HOST:PORT or tls://HOST:PORT')
  .option('--name <name>', 'this node\'s name in the cluster (default: the hostname)')
  .option('--cluster-user <user>', 'NATS user')
  .option('--cluster-password <password>', 'NATS password (default: $HANGAR_CLUSTER_PASSWORD)')
  .option('--cluster-token <token>', 'NATS token (default: $HANGAR_CLUSTER_TOKEN)')
  .option('--cluster-creds <file>', 'NATS .creds file (user JWT and nkey seed)')
  .option('--cluster-ca <file>', 'CA file for a tls:// server')
  .option('--insecure', 'join a non-loopback server without credentials', false)
  .option('--cluster-role <role>', 'node: serve this machine only; viewer: watch and call the nodes only (default: both)', parseRole)
  .option('--insecure-any-caller', 'act on every call from the cluster, signed or not: anyone who reaches the NATS server controls this node', false)
  .option('--heartbeat <ms>', 'presence heartbeat interval', parseMs, DEFAULT_HEARTBEAT_MS)
  .option('--call-timeout <ms>', 'how long a call to another node may take', parseMs, DEFAULT_CALL_TIMEOUT_MS)
  .option('--restore-backends', 'start again, models loaded, the backends that ran when the agent last stopped (default: the node\'s settings)', false)
  .option('--label <key=value>', 'a label the cluster selects this node by, as --on label:KEY=VALUE (repeatable; default: the node\'s settings)', collect, []), parseMs)
  .action(async (options: AgentCommandOptions) => {
    const home = homeDir(options.home ?? program.opts<GlobalOptions>().home);
    const password = options.clusterPassword ?? process.env.HANGAR_CLUSTER_PASSWORD;
    const token = options.clusterToken ?? process.env.HANGAR_CLUSTER_TOKEN;
    const cluster = options.cluster === undefined ? undefined : {
      url: options.cluster,
      name: options.name ?? hostname(),
      user: options.clusterUser,
      password,
      token: token || undefined,
      credsFile: options.clusterCreds,
      caFile: options.clusterCa,
      insecure: options.insecure,
      role: options.clusterRole,
      anyCaller: options.insecureAnyCaller,
      heartbeatMs: options.heartbeat,
      callTimeoutMs: options.callTimeout,
    };
    // Loaded only here: client commands start faster without the node's code and its dependencies.
    const labels = options.label.length > 0 ? Object.fromEntries(options.label.map(labelOption).map((l) => [l.key, l.value])) : undefined;
    const { runAgent } = await import('./run-agent.ts');
    const localai = await localaiHostOptions(options, options.insecure);
    await runAgent({ ...options, home, galleries: options.gallery, cluster, labels, localai, localaiServer: await localaiServerOptions(options) });
  });

interface AgentCommandOptions extends LocalAiCommandOptions {
  home?: string; gallery: string[]; listen: string; token?: string; tokenFile?: string; autoUpgrade: boolean; ports?: string;
  startTimeout?: string; maxInstallSize?: string; stallTimeout?: string; restoreBackends: boolean; label: string[];
  cluster?: string; name?: string; clusterUser?: string; clusterPassword?: string; clusterToken?: string; clusterCreds?: string;
  clusterCa?: string; insecure: boolean; clusterRole?: ClusterRole; insecureAnyCaller: boolean; heartbeat: number; callTimeout: number;
}

function labelOption(text: string): { key: string; value: string } {
  try {
    return parseLabel(text);
  } catch (error) {
    throw new CommanderError(2, 'hangar.usage', `--label ${(error as Error).message}`);
  }
}

function parseRole(value: string): ClusterRole {
  if (value === 'node' || value === 'viewer' || value === 'node+viewer') return value;
  throw new CommanderError(2, 'hangar.usage', `--cluster-role wants node, viewer or node+viewer, got "${value}"`);
}

const cluster = program.command('cluster').description('this host\'s cluster key and trust list, a nats-server configuration, and the link\'s status');

cluster.command('key').description('print this home\'s node id and public key (made on first use)').option('--json', 'print JSON to stdout')
  .action(async (options: { json?: boolean }) => printed(options, await showKey(homeDir(program.opts<GlobalOptions>().home))));

cluster.command('trust').description('list the viewer keys this node acts for, or add one').argument('[key]', 'a key `hangar cluster key` printed on the viewer')
  .option('--label <name>', 'a name to know the key by').option('--json', 'print JSON to stdout')
  .action(async (key: string | undefined, options: { json?: boolean; label?: string }) =>
    printed(options, await trust(homeDir(program.opts<GlobalOptions>().home), key, options.label)));

cluster.command('untrust').description('stop acting for a viewer key').argument('<key>', 'the key, its id or its label').option('--json', 'print JSON to stdout')
  .action(async (which: string, options: { json?: boolean }) => printed(options, await untrust(homeDir(program.opts<GlobalOptions>().home), which)));

cluster.command('nats-config').description('write a nats-server configuration for the cluster and print how to start each agent')
  .requiredOption('--node <name=key>', 'a node: its name and the key (or node id) `hangar cluster key` printed there (repeatable)', collect, [])
  .option('--viewer <name[=key]>', 'a machine that calls the nodes, with its key to have each node trust it (repeatable; a node may be one too)', collect, [])
  .option('--out <file>', 'where to write the configuration', 'nats.conf')
  .option('--listen <host:port>', 'where nats-server listens', '0.0.0.0:4222')
  .option('--url <url>', 'the address the agents join (default: nats://THIS_HOST:PORT)')
  .option('--store-dir <dir>', 'JetStream\'s directory (default: nats-store beside --out)')
  .option('--json', 'print JSON to stdout')
  .action(async (options: { node: string[]; viewer: string[]; out: string; listen: string; url?: string; storeDir?: string; json?: boolean }) => {
    const port = /:(\d+)$/.exec(options.listen)?.[1] ?? '4222';
    printed(options, await writeNatsConfig({
      nodes: options.node,
      viewers: options.viewer,
      out: options.out,
      listen: options.listen,
      url: options.url ?? `nats://${hostname()}:${port}`,
      storeDir: options.storeDir ?? join(dirname(resolve(options.out)), 'nats-store'),
    }));
  });

client('status', 'what this host\'s cluster link dropped, refused, or was refused by the NATS server', (c) => c, { parent: cluster })
  .action(withClient(async (c, options: { json?: boolean }) => {
    const status = await c.clusterStatus({ node: LOCAL_NODE });
    print(options, status, () => statusText(status));
  }));

function printed(options: { json?: boolean }, result: Printed): void {
  print(options, result.json, () => result.text);
}

client('nodes', 'list the cluster\'s nodes: status, access, labels, counts, drift, resources, last seen').action(withClient(async (c, options: { json?: boolean }) => {
  const [cards, status] = await Promise.all([c.nodes({ node: LOCAL_NODE }), c.clusterStatus({ node: LOCAL_NODE })]);
  const lost = status.role !== null && !status.link.connected ? `cluster connection lost: ${status.link.reason ?? 'no answer'}, retrying` : '';
  const refused = status.violations.at(-1) ? `the NATS server refused this host: ${status.violations.at(-1)!.message}` : '';
  print(options, cards, () => nodesTable(cards, [lost, refused].filter(Boolean).join('; ')) + statusNotes(status));
}));

client('rollouts', 'list the cluster\'s rolling upgrades and what each did on each node').action(withClient(async (c, options: { json?: boolean }) => {
  const [rollouts, status] = await Promise.all([c.rollouts({ node: LOCAL_NODE }), c.clusterStatus({ node: LOCAL_NODE })]);
  print(options, rollouts, () => staleStoreNote(status) + (rollouts.map(rolloutTable).join('\n') || 'no rollouts yet\n') + untrustedLines(status, 'rollouts'));
}));

client('resume', 'take over an interrupted rolling upgrade and go on where it stopped', (c) => c.requiredOption('--rollout <id>', 'the rollout (see hangar rollouts)'))
  .action(withClient((c, options: { json?: boolean; rollout: string }) => followRollout(c, options, () => c.resumeRollout({ node: LOCAL_NODE, id: options.rollout }), upgradeFailed)));

client('pin', 'record VERSION as the desired version of NAME on the nodes --on selects: they install or move to it by themselves', (c) =>
  c.argument('<name>').argument('<version>'), { sets: true, onDefault: 'every node' })
  .action(withClient(async (c, name: string, version: string, options: { json?: boolean; on?: string }) => {
    const pinned = await c.pin({ node: LOCAL_NODE, name, version, on: await selectorOf(c, options.on) });
    print(options, pinned, () => `${name} ${version} is the desired version on ${pinned.on === 'all' ? 'every node' : pinned.on}: nodes that differ converge by themselves (hangar desired, hangar ls --on all)\n`);
  }));

client('unpin', 'clear the desired version of NAME: nodes keep what they run', (c) => c.argument('<name>'))
  .action(withClient(async (c, name: string, options: { json?: boolean }) => {
    await c.unpin({ node: LOCAL_NODE, name });
    print(options, { unpinned: name }, () => `${name} has no desired version any more\n`);
  }));

client('desired', 'the cluster\'s desired versions, and each node that is not there yet and why').action(withClient(async (c, options: { json?: boolean }) => {
  const [view, status, cards] = await Promise.all([c.desired({ node: LOCAL_NODE }), c.clusterStatus({ node: LOCAL_NODE }), c.nodes({ node: LOCAL_NODE })]);
  print(options, view, () => staleStoreNote(status) + desiredTable(view, cards) + untrustedLines(status, 'desired'));
}));

client('cordon', 'keep every rollout and convergence off this node (see uncordon)').action(withClient(async (c, options: { json?: boolean }) => {
  const view = await c.updateSettings({ node, settings: { cordoned: true } });
  print(options, view.settings, () => 'cordoned: no rollout or convergence touches this node until hangar uncordon\n');
}));

client('uncordon', 'let rollouts and convergence touch this node again').action(withClient(async (c, options: { json?: boolean }) => {
  const view = await c.updateSettings({ node, settings: { cordoned: false } });
  print(options, view.settings, () => 'uncordoned: rollouts and convergence touch this node again\n');
}));

client('drain', 'cordon this node, then stop every process it supervises (Free, then stop); lists them and asks first', (c) =>
  c.option('-y, --yes', 'do not ask for confirmation'))
  .action(withClient(async (c, options: { json?: boolean; yes?: boolean }) => {
    const running = await c.processes({ node });
    for (const p of running) process.stderr.write(`will stop ${p.model} (${p.backend}, pid ${p.pid}, ${p.state})\n`);
    const what = running.length === 0 ? 'cordon this node (it runs no process)' : `cordon this node and stop ${running.length} process${running.length === 1 ? '' : 'es'}`;
    if (!options.yes && !(await confirm(`${what}? [y/N] `))) throw new Error('not drained');
    const stopped = await c.drain({ node });
    print(options, { cordoned: true, stopped }, () => `drained: cordoned, ${stopped.length === 0 ? 'no process to stop' : `stopped ${stopped.join(', ')}`}\n`);
  }));

client('gallery', 'list gallery entries (--on all --refresh: re-read every node\'s galleries)', (c) => c.option('--refresh', 're-read galleries and registry digests'), { sets: true })
  .action(withClient(async (c, options: { json?: boolean; refresh?: boolean }) => {
    if (targets) {
      const listed = await Promise.all(targets.map((t) => (t.card.status === 'online' ? c.gallery({ node: t.node, refresh: options.refresh === true }).catch((e: Error) => e) : null)));
      const answers = targets.map((t, i) => ({ card: t.card, answer: listed[i] ?? null }));
      const rows = answers.filter((a) => Array.isArray(a.answer)).map(({ card, answer }) => ({ node: card.name, entries: (answer as unknown[]).length, ...(options.refresh && { refreshed: 'now' }) }));
      print(options, answers.map(({ card, answer }) => ({ node: card.id, name: card.name, entries: Array.isArray(answer) ? answer.map(galleryJson) : null, error: answer instanceof Error ? answer.message : null })),
        () => table(rows, 'no node answered', unansweredLines(answers)));
      if (answers.some((a) => !Array.isArray(a.answer))) process.exitCode = 1;
      return;
    }
    const entries = await c.gallery({ node, refresh: options.refresh === true });
    const { galleryProblems } = await c.info({ node });
    for (const problem of galleryProblems) process.stderr.write(`hangar: warning: ${problem.message}\n`);
    if (entries.length === 0 && galleryProblems.length > 0) process.exitCode = 1;
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

client('ls', 'list installed backends (--on all or --on A,B: a backend × node matrix)', undefined, { sets: true }).action(withClient(async (c, options: { json?: boolean }) => {
  if (targets) {
    const [listed, desired] = await Promise.all([
      Promise.all(targets.map((t) => (t.card.status === 'online' ? c.backends({ node: t.node }).catch((e: Error) => e) : null))),
      c.desired({ node: LOCAL_NODE }),
    ]);
    const columns = targets.map((t, i) => ({ card: t.card, backends: listed[i] ?? null }));
    return print(options, matrixJson(columns, desired), () => matrix(columns, desired));
  }
  const backends = await c.backends({ node });
  print(options, backends.map(lsJson), () =>
    table(backends.map((b) => ({
      name: b.name,
      version: b.upgradable ? upgradeText(b.version, b.availableVersion) : b.version,
      processes: b.processes.map(lsProcess).join(' ') || '-',
      status: lsStatus(b),
    })), 'no backends installed (try: hangar gallery, then hangar install NAME)', upgradesUnknownLines(backends)),
  );
}));

client('info', 'this node: where it lives, what it runs on, and how a stop finds all of a backend\'s processes').action(withClient(async (c, options: { json?: boolean }) => {
  const info = await c.info({ node });
  print(options, info, () => infoText(info));
}));

client('install', 'install a backend from the gallery (on each node of --on all or --on A,B)', (c) =>
  gated(swapping(c.argument('<name>', 'name or gallery@name').option('--force', 'reinstall when already installed'))), { sets: true })
  .action(withClient((c, name: string, options: SwapCommandOptions & { force?: boolean }) =>
    runJobs(c, options, (on) => c.install({ node: on, name, force: options.force === true, ...swapOptions(options) }))));

client('upgrade', 'upgrade a backend (or --all); with --on all (or label:KEY=VALUE, or A,B), a rolling upgrade across those nodes', (c) =>
  gated(swapping(c.argument('[name]').option('--all', 'upgrade every upgradable backend').option('--max-parallel <n>', 'with --on all: nodes upgraded at once', parseCount, 1)
    .option('--to <version>', 'with --on all: the version to bring every node to (default: the one their galleries offer)'))), { sets: true })
  .action(withClient(async (c, name: string | undefined, options: SwapCommandOptions & { all?: boolean; maxParallel: number; on?: string; to?: string }) => {
    if (targets) {
      if (!name || options.all) throw new CommanderError(2, 'hangar.usage', 'a rolling upgrade needs one NAME');
      const on = await selectorOf(c, options.on);
      return followRollout(c, options, () => c.rollout({ node: LOCAL_NODE, name, maxParallel: options.maxParallel, on, ...(options.to && { version: options.to }) }), upgradeFailed);
    }
    if (options.all) {
      const results = await c.upgradeAll({ node });
      print(options, results, () => table(results.map((r) => ({ backend: r.backend, result: r.ok ? 'upgraded' : r.error })), 'nothing to upgrade'));
      if (results.some((r) => !r.ok)) process.exitCode = 1;
      return;
    }
    if (!name) throw new CommanderError(2, 'hangar.usage', 'upgrade needs a NAME or --all');
    await runJob(c, options, () => c.upgrade({ node, name, ...swapOptions(options) }));
  }));

client('rollback', 'swap back to the previous version (--rollout ID: on every node that rollout upgraded)', (c) =>
  gated(swapping(c.argument('[name]').option('--rollout <id>', 'roll back the nodes a rolling upgrade upgraded'))))
  .action(withClient(async (c, name: string | undefined, options: SwapCommandOptions & { rollout?: string }) => {
    if (options.rollout) return followRollout(c, options, () => c.rollbackRollout({ node: LOCAL_NODE, id: options.rollout! }), rollbackFailed);
    if (!name) throw new CommanderError(2, 'hangar.usage', 'rollback needs a NAME or --rollout ID');
    await runJob(c, options, () => c.rollback({ node, name, ...swapOptions(options) }));
  }));

client('delete', 'delete an installed backend (from each node of --on all or --on A,B)', (c) => swapping(c.argument('<name>')), { sets: true })
  .action(withClient((c, name: string, options: SwapCommandOptions) => runJobs(c, options, (on) => c.delete({ node: on, name, ...swapOptions(options) }))));

interface LoadCommandOptions {
  json?: boolean;
  restart?: string;
  restartDelay?: number;
  maxRestarts?: number;
  startTimeout?: number;
}

client('load', 'ensure a fresh process for MODEL on backend NAME and load it', (c) =>
  c
    .argument('<name>')
    .argument('<model>')
    .option('--restart <policy>', 'when its process ends by itself: never, on-failure (default) or always')
    .option('--restart-delay <time>', 'wait before a restart when the process ended within 10 s of its start twice in a row, doubling with each further one (e.g. 500ms, 2s; default 1s); the first such end, and a process that ran longer, restart at once', parseDelay)
    .option('--max-restarts <n>', 'ends within 10 s of a start, in a row, that leave it crash-looping (default 5)', parseWhole)
    .option('--start-timeout <seconds>', 'how long its start and its load may take (default: the node\'s start-timeout); never less than twice the longest seen here', parseWhole))
  .action(withClient(async (c, backend: string, model: string, options: LoadCommandOptions) => {
    // The agent checks the policy and the numbers against the contract's schema, as every request.
    const result = await c.load({
      node,
      backend,
      model,
      ...(options.restart !== undefined && { restart: options.restart as RestartPolicy }),
      ...(options.restartDelay !== undefined && { restartDelayMs: options.restartDelay }),
      ...(options.maxRestarts !== undefined && { maxRestarts: options.maxRestarts }),
      ...(options.startTimeout !== undefined && { startTimeoutMs: options.startTimeout * 1000 }),
    });
    print(options, result, () => `${result.message}\npid ${result.pid}, port ${result.port}${result.reused ? ' (reused)' : ''}\n`);
  }));

client('respawn', 'force a fresh process for MODEL (or every process of --backend NAME)', (c) => c.argument('[model]').option('--backend <name>'))
  .action(withClient(async (c, model: string | undefined, options: { json?: boolean; backend?: string }) => {
    if (options.backend) {
      const processes = await c.respawnBackend({ node, name: options.backend });
      return print(options, processes.map(psJson), () => processes.map((p) => `respawned ${p.model}: pid ${p.pid}\n`).join('') || 'no processes\n');
    }
    if (!model) throw new CommanderError(2, 'hangar.usage', 'respawn needs a MODEL or --backend NAME');
    const p = await c.respawn({ node, model });
    print(options, psJson(p), () => `respawned ${p.model} (run by ${runByText(p)}): pid ${p.pid}, port ${p.port}${p.message ? ` (${p.message})` : ''}\n`);
  }));

client('restart', 'start the process of MODEL again (exited, crashed or running) and reload the model', (c) => c.argument('<model>'))
  .action(withClient(async (c, model: string, options: { json?: boolean }) => {
    const p = await c.restart({ node, model });
    print(options, psJson(p), () => `restarted ${p.model}: pid ${p.pid}, port ${p.port}${p.error ? `\n${p.error}` : ''}\n`);
  }));

client('unload', "free MODEL's memory: Hangar's process stays for the next load; LocalAI's model is stopped (its /backend/shutdown)", (c) => c.argument('<model>'))
  .action(withClient(async (c, model: string, options: { json?: boolean }) => {
    const p = await c.unload({ node, model });
    const how = p.runBy === 'localai' ? 'LocalAI stopped it' : `its process (pid ${p.pid}) stays for the next load`;
    print(options, psJson(p), () => `unloaded ${p.model} (run by ${runByText(p)}): ${how}\n`);
  }));

client('stop', 'stop the process serving MODEL', (c) => c.argument('<model>'))
  .action(withClient(async (c, model: string, options: { json?: boolean }) => {
    await c.stop({ node, model });
    print(options, { stopped: model }, () => `stopped ${model}\n`);
  }));

client('leftover', 'restore (a backup of a backend that is gone) or delete a working directory LocalAI left behind', (c) =>
  c.argument('<name>', 'as ls lists it, e.g. NAME.install-backup').addArgument(new Argument('<action>').choices(['restore', 'delete'])))
  .action(withClient(async (c, name: string, action: LeftoverAction, options: { json?: boolean }) => {
    await c.resolveLeftover({ node, name, action });
    print(options, { [action === 'restore' ? 'restored' : 'deleted']: name }, () => `${action === 'restore' ? 'restored' : 'deleted'} ${name}\n`);
  }));

client('stop-process', 'stop one process a scan shows: supervised, or stale and not started by Hangar', (c) =>
  c.argument('<pid>', 'process id (see hangar scan)').option('-y, --yes', 'do not ask for confirmation'))
  .action(withClient(async (c, pidText: string, options: { json?: boolean; yes?: boolean }) => {
    const pid = Number(pidText);
    if (!/^\d+$/.test(pidText) || !Number.isSafeInteger(pid)) throw new CommanderError(2, 'hangar.usage', `stop-process wants a PID, got "${pidText}"`);
    const found = (await c.scan({ node })).find((entry) => entry.pid === pid);
    if (!found) throw new Error(`pid ${pid} is not a process of this node's backends (see hangar scan)`);
    const what = `pid ${pid} (${found.command || 'no command line'})`;
    if (!options.yes && !(await confirm(`stop ${what}? [y/N] `))) throw new Error(`${what} was not stopped`);
    await c.stopProcess({ node, pid });
    print(options, { stopped: pid, command: found.command }, () => `stopped ${what}\n`);
  }));

client('ps', 'list backend processes with their cwd status (--on all or --on A,B: every node\'s, in one table)', undefined, { sets: true })
  .action(withClient(async (c, options: { json?: boolean }) => {
    // The VRAM column, where a node's tool reports GPU memory per process (the JSON has its own: hangar resources).
    const vramOn = (n: string) => (options.json ? Promise.resolve(null) : c.resources({ node: n }).then(processVram, () => null));
    if (targets) {
      const online = (t: Target) => t.card.status === 'online';
      const [listed, vrams] = await Promise.all([
        Promise.all(targets.map((t) => (online(t) ? c.processes({ node: t.node }).catch((e: Error) => e) : null))),
        Promise.all(targets.map((t) => (online(t) ? vramOn(t.node) : null))),
      ]);
      const answers = targets.map((t, i) => ({ card: t.card, answer: listed[i] ?? null }));
      const json = answers.map(({ card, answer }) => ({
        node: card.id, name: card.name, status: card.status,
        error: answer instanceof Error ? answer.message : null,
        processes: Array.isArray(answer) ? answer.map(psJson) : null,
      }));
      const runBy = answers.some(({ answer }) => Array.isArray(answer) && answer.some((p) => p.runBy));
      const anyVram = vrams.some((v) => v !== null);
      const rows = answers.flatMap(({ card, answer }, i) => (Array.isArray(answer) ? answer.map((p) => ({ node: card.name, ...psRow(p, runBy, anyVram ? vrams[i] : undefined) })) : []));
      return print(options, json, () => table(rows, 'no backend processes on any node', unansweredLines(answers)));
    }
    const [processes, vram] = await Promise.all([c.processes({ node }), vramOn(node)]);
    const runBy = processes.some((p) => p.runBy);
    print(options, processes.map(psJson), () => table(processes.map((p) => psRow(p, runBy, vram ?? undefined)), 'no backend processes'));
  }));

client('resources', 'the node\'s CPUs, memory, disk and GPUs, and the GPU memory each supervised process holds (--on all: one table)', undefined, { sets: true })
  .action(withClient(async (c, options: { json?: boolean }) => {
    if (targets) {
      const read = await Promise.all(targets.map((t) => (t.card.status === 'online' ? c.resources({ node: t.node }).catch((e: Error) => e) : null)));
      const answers = targets.map((t, i) => ({ card: t.card, answer: read[i] ?? null }));
      const json = answers.map(({ card, answer }) => ({ node: card.id, name: card.name, status: card.status, error: answer instanceof Error ? answer.message : null, resources: answer instanceof Error ? null : answer }));
      const rows = answers.flatMap(({ card, answer }) => (answer && !(answer instanceof Error) ? [resourcesRow(card.name, answer)] : []));
      return print(options, json, () => table(rows, 'no node answered', unansweredLines(answers)));
    }
    const r = await c.resources({ node });
    print(options, r, () => resourcesText(r));
  }));

client('scan', 'find every process whose cwd is or was inside the backends directory').action(withClient(async (c, options: { json?: boolean }) => {
  const [found, supervised] = await Promise.all([c.scan({ node }), c.processes({ node })]);
  const rows = found.map((entry) => scanJson(entry, supervised));
  print(options, rows, () => table(rows, 'no process runs from the backends directory'));
}));

client('settings', `show this node's settings, or change one: settings KEY VALUE (${settingsKeys()})`, (c) =>
  c.argument('[key]').argument('[value]').option('--backend <name>', 'start-timeout SECONDS for this backend only (default: back to the node\'s)'),
).action(withClient(async (c, key: string | undefined, value: string | undefined, options: { json?: boolean; backend?: string }) => {
  if (key !== undefined && value === undefined) throw new CommanderError(2, 'hangar.usage', `settings ${key} wants a value`);
  if (options.backend !== undefined && key !== 'start-timeout') throw new CommanderError(2, 'hangar.usage', '--backend goes with start-timeout only');
  const patch = async () => options.backend === undefined
    ? settingPatch(key!, value!)
    : backendStartTimeoutPatch((await c.settings({ node })).settings.backendStartTimeoutSec, options.backend, value!);
  const view = key === undefined ? await c.settings({ node }) : await c.updateSettings({ node, settings: await patch() });
  print(options, view, () => settingsTable(view));
}));

client('galleries', 'list the galleries this node reads, or change them: add LOCATION [NAME], remove, enable, disable, up, down NAME', (c) =>
  c.argument('[action]').argument('[args...]').option('--force', 'add a gallery even when it cannot be read now'),
).action(withClient(async (c, action: string | undefined, args: string[], options: { json?: boolean; force?: boolean }) => {
  let view = await c.settings({ node });
  if (action !== undefined) {
    const galleries = editedGalleries(view.settings.galleries, action, args);
    if (action === 'add' && !options.force) {
      const problem = await galleryLocationProblem(args[0]!, { pathsAreHere: agentIsHere() });
      if (problem) throw new Error(`${problem}: the gallery was not added (--force adds it anyway)`);
    }
    view = await c.updateSettings({ node, settings: { galleries } });
  }
  print(options, view.settings.galleries, () => galleriesTable(view));
}));

client('jobs', 'list this node\'s jobs (installs, upgrades, rollbacks, deletes): running ones with their progress, then how each ended')
  .action(withClient(async (c, options: { json?: boolean }) => {
    const jobs = await c.jobs({ node });
    print(options, jobs, () => jobsTable(jobs));
  }));

client('cancel', 'cancel a running job (see hangar jobs): what it fetched is dropped and the installed backend is left as it was', (c) =>
  c.argument('<job>', 'a job id, or its first characters'))
  .action(withClient(async (c, text: string, options: { json?: boolean }) => {
    const id = await jobId(c, text);
    const asked = await c.cancelJob({ node, id });
    if (asked.finishedAt !== null) throw new Error(`the ${asked.kind} of ${asked.backend} already ended: ${asked.state}`);
    const final = await c.waitJob({ node, id });
    if (final.state !== 'cancelled') throw new Error(`the ${final.kind} of ${final.backend} was past the point where it can be cancelled, and ended: ${final.state}`);
    print(options, final, () => `${cancelledText(final)}\n`);
  }));

client('wait', 'follow a job (see hangar jobs) until it ends, with its progress', (c) => c.argument('<job>', 'a job id, or its first characters'))
  .action(withClient(async (c, text: string, options: { json?: boolean }) => {
    const id = await jobId(c, text);
    await runJob(c, options, async () => (await c.jobs({ node })).find((j) => j.id === id) ?? c.waitJob({ node, id }), { onInterrupt: 'stop following' });
  }));

client('logs', 'print the recent output of MODEL', (c) => c.argument('<model>').option('-f, --follow', 'keep printing new lines'))
  .action(withClient(async (c, model: string, options: { json?: boolean; follow?: boolean }) => {
    const show = (line: LogLine) => process.stdout.write(options.json ? JSON.stringify(line) + '\n' : `${line.at} ${line.text}\n`);
    if (options.follow) c.onEvent((e) => e.type === 'log' && e.node === node && e.line.model === model && show(e.line));
    (await c.logs({ node, model })).forEach(show);
    if (options.follow) await c.closed;
  }));

function client(name: string, description: string, configure: (c: Command) => Command = (c) => c, options: { sets?: boolean; parent?: Command; onDefault?: string } = {}): Command {
  if (options.sets) acceptsSets.add(name);
  return configure((options.parent ?? program).command(name).description(description))
    .option('--on <node>', `the node to act on: a name or id from \`hangar nodes\`${options.sets ? ', all, or A,B' : ''} (default: ${options.onDefault ?? "this host's node"})`)
    .option('--json', 'print JSON to stdout');
}

function parseMs(value: string): number {
  const ms = Number(value);
  if (!Number.isInteger(ms) || ms < 10 || ms > 600_000) throw new CommanderError(2, 'hangar.usage', `wants milliseconds between 10 and 600000, got "${value}"`);
  return ms;
}

/** "500ms", "2s" or a number of milliseconds. */
function parseDelay(value: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s)?$/.exec(value.trim());
  if (!match) throw new CommanderError(2, 'hangar.usage', `--restart-delay wants a time such as 500ms or 2s, got "${value}"`);
  return Math.round(Number(match[1]) * (match[2] === 's' ? 1000 : 1));
}

function parseWhole(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new CommanderError(2, 'hangar.usage', `wants a whole number, got "${value}"`);
  return n;
}

function parseCount(value: string): number {
  const n = Number(value);
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

/** Asks on the terminal (or reads one line from a piped stdin); only "y" or "yes" agrees. */
async function confirm(question: string): Promise<boolean> {
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await Promise.race([prompt.question(question), once(prompt, 'close').then(() => '')]);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    prompt.close();
  }
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Wraps an action: connects first, resolves `--on`, always disconnects. */
function withClient<A extends unknown[]>(action: (c: WireClient, ...args: A) => Promise<void>) {
  return async (...args: A) => {
    const globals = program.opts<GlobalOptions>();
    const command = args.at(-1) as Command;
    const on = command.opts<{ on?: string }>().on;
    if (namesASet(on) && !acceptsSets.has(command.name())) throw new CommanderError(2, 'hangar.usage', `${command.name()} acts on one node: --on ${on} is not for it`);
    const c = await connect({ node: globals.node, token: globals.token, home: homeDir(globals.home) });
    try {
      if (namesASet(on)) targets = await resolveTargets(c, on);
      else node = await resolveNode(c, on);
      await action(c, ...args);
    } finally {
      c.close();
    }
  };
}

function print(options: { json?: boolean }, value: unknown, human: () => string): void {
  process.stdout.write(options.json ? JSON.stringify(value, null, 2) + '\n' : human());
}

/** What Ctrl-C does while a job is followed: cancel the job (as the UI's Cancel does), or only stop following it. */
type InterruptMode = 'cancel' | 'stop following';

/** Set by the first Ctrl-C: a command that acts on several nodes starts nothing more. */
let interrupted = false;

/**
 * Starts a job, shows its progress on stderr, and prints how it ended on stdout ("done", "up to date", "already
 * installed"); a job that fails fails the command. A job cancelled by this command's own Ctrl-C exits 130.
 */
async function runJob(c: WireClient, options: { json?: boolean }, start: () => Promise<JobView>, follow: { onInterrupt?: InterruptMode } = {}): Promise<void> {
  const final = await followJob(c, start, node, follow.onInterrupt);
  if (final.state === 'cancelled' && interrupted) {
    process.exitCode = 130;
    return;
  }
  if (final.state !== 'done') throw new Error(final.error ?? `${final.kind} ${final.backend} ${final.state}`);
  const swapped = !options.json && final.phase === 'done' && final.kind !== 'delete';
  const version = swapped ? ((await c.backends({ node })).find((b) => b.name === final.backend)?.version ?? null) : null;
  print(options, final, () => `${jobEndText(final, version)}\n`);
}

/** One node: runJob. A set: the job on each online node in turn, past failures, then a line per node. */
async function runJobs(c: WireClient, options: { json?: boolean }, start: (node: string) => Promise<JobView>): Promise<void> {
  if (!targets) return runJob(c, options, () => start(node));
  const results: Array<{ node: string; id: string; result: string; reason: string | null }> = [];
  for (const { node: on, card } of targets) {
    const row = { node: card.name, id: card.id, result: 'skipped', reason: null as string | null };
    if (interrupted) row.reason = 'interrupted';
    else if (card.status !== 'online') row.reason = `offline: ${card.reason ?? 'no heartbeat'}`;
    else {
      process.stderr.write(`${card.name} (${card.id}):\n`);
      const final = await followJob(c, () => start(on), on).catch((error: Error) => error);
      row.result = final instanceof Error ? 'failed' : final.state === 'done' ? 'done' : final.state;
      row.reason = final instanceof Error ? final.message : final.error;
    }
    results.push(row);
  }
  print(options, results, () => table(results, 'no nodes'));
  if (results.some((r) => r.result === 'failed')) process.exitCode = 1;
  if (interrupted) process.exitCode = 130;
}

/**
 * Starts a job and shows its progress on stderr until it ends. The first Ctrl-C cancels the job and waits to say
 * how it ended (or, following only, stops following); a second leaves it running and says how to follow it.
 */
async function followJob(c: WireClient, start: () => Promise<JobView>, on = node, onInterrupt: InterruptMode = 'cancel'): Promise<JobView> {
  // Every event of a job that arrives before its id does: a fast job may be past a phase by then, and each is shown.
  const early = new Map<string, JobView[]>();
  let job: JobView | null = null;
  let presses = 0;
  let last = '';
  const show = (view: JobView) => {
    // How it ended is the command's own last word, on stdout.
    if (view.finishedAt !== null) return;
    const line = jobLine(view);
    if (line === last) return;
    last = line;
    process.stderr.write(process.stderr.isTTY ? `\r\x1b[K${line}` : `${line}\n`);
  };
  const say = (line: string) => process.stderr.write(`${process.stderr.isTTY ? '\r\x1b[K' : ''}hangar: ${line}\n`);
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
    if (process.stderr.isTTY) process.stderr.write('\r\x1b[K');
  }
}

/** What a cancelled install or upgrade leaves: it stops before its swap, so the live tree is as it was. */
function cancelledText(job: JobView): string {
  return `cancelled the ${job.kind} of ${job.backend}; the live tree is untouched`;
}

function leftRunningText(job: JobView, on: string): string {
  const where = on === LOCAL_NODE ? '' : ` --on ${on}`;
  return `left the ${job.kind} of ${job.backend} running (job ${job.id}): \`hangar wait ${job.id}${where}\` follows it, \`hangar cancel ${job.id}${where}\` cancels it`;
}

/** A job id from `hangar jobs`, or the first characters of one; a job from before the agent's restart by its full id. */
async function jobId(c: WireClient, text: string): Promise<string> {
  const jobs = await c.jobs({ node });
  if (jobs.some((j) => j.id === text)) return text;
  const matching = jobs.filter((j) => j.id.startsWith(text));
  if (matching.length > 1) throw new Error(`${matching.length} jobs start with "${text}": give more of the id (see hangar jobs)`);
  return matching[0]?.id ?? text;
}

/** Whether a path given to this command names a file on the agent's machine: the node is this host's own, here. */
function agentIsHere(): boolean {
  const url = program.opts<GlobalOptions>().node;
  return node === LOCAL_NODE && (url === undefined || /^https?:\/\/(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:|\/|$)/i.test(url));
}

const upgradeFailed = (n: RolloutNode) => n.step === 'failed';
const rollbackFailed = (n: RolloutNode) => (n.reason ?? '').startsWith('rollback failed');

/** Follows a rollout (or its rollback) to its end, node by node on stderr, then prints each node's result. */
async function followRollout(c: WireClient, options: { json?: boolean }, start: () => Promise<RolloutView>, failed: (n: RolloutNode) => boolean): Promise<void> {
  const early: RolloutView[] = [];
  let follow: ((r: RolloutView) => void) | null = null;
  const off = c.onEvent((e) => {
    if (e.type === 'rollout') (follow ?? ((r: RolloutView) => early.push(r)))(e.rollout);
  });
  const started = await start();
  // A rollout runs in the host, not in this command: Ctrl-C stops following it.
  process.once('SIGINT', () => {
    process.stderr.write(`hangar: stopped following; rollout ${started.id} of ${started.backend} goes on in the host (see hangar rollouts)\n`);
    process.exit(130);
  });
  // What each node already was when the command started is not news.
  const shown = new Map(started.nodes.map((n) => [n.id, stepLine(n)]));
  const show = (rollout: RolloutView) => {
    for (const n of rollout.nodes) {
      if (shown.get(n.id) !== stepLine(n)) process.stderr.write(`${rollout.backend}: ${stepLine(n)}\n`);
      shown.set(n.id, stepLine(n));
    }
  };
  const finished = (r: RolloutView) => r.state !== 'running' && r.state !== 'rolling-back';
  const final = await new Promise<RolloutView>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    const seen = (r: RolloutView) => {
      if (settled || r.id !== started.id) return;
      show(r);
      if (!finished(r)) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    follow = seen;
    early.forEach(seen);
    // The rollout runs in the agent: an agent that dies takes it with it, and a viewer can resume it.
    void c.closed.then(({ code }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(new Error(`the agent closed its connection (${code}) while it ran rollout ${started.id}: another viewer can see it interrupted and resume or roll it back (hangar rollouts)`));
    });
    // Events carry the progress; a slow look at the record backs them up.
    const poll = () => c.rollouts({ node: LOCAL_NODE }).then((all) => {
      const r = all.find((x) => x.id === started.id);
      if (r) seen(r);
      if (!settled) timer = setTimeout(poll, 2000);
    }, reject);
    void poll();
  });
  off();
  print(options, final, () => rolloutTable(final));
  if (final.nodes.some(failed)) process.exitCode = 1;
}

function stepLine(n: RolloutNode): string {
  return `${n.name} (${n.id}): ${n.step}${n.reason ? `: ${n.reason}` : ''}`;
}

// Output piped into `head` and the like: the reader is gone, so there is nothing left to say.
process.stdout.on('error', (error: NodeJS.ErrnoException) => process.exit(error.code === 'EPIPE' ? 0 : 1));

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    if (error.exitCode !== 0 && error.code === 'hangar.usage') process.stderr.write(`hangar: ${error.message}\n`);
    process.exit(error.exitCode === 0 ? 0 : 2);
  }
  // The home's holder names itself ("hangar (pid N) already serves this home at URL"): no second prefix.
  const prefix = error instanceof HomeBusyError ? '' : 'hangar: ';
  process.stderr.write(`${prefix}${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
