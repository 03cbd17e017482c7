// `hangar agent`: runs a node and serves it over HTTP + WebSocket.
import { CommanderError } from 'commander';
import { typedNumber } from '../typed-number.ts';
import { hostname } from 'node:os';
import type { ClusterRole } from '../../../shared/types.ts';
import { parseLabel } from '../../../shared/selector.ts';
import { DEFAULT_CALL_TIMEOUT_MS, DEFAULT_HEARTBEAT_MS } from '../../cluster/defaults.ts';
import { localaiHostOptions, localaiOptions, localaiRunOptions, localaiServerOptions, type LocalAiCommandOptions } from '../localai-options.ts';
import { agentHomeDir, DEFAULT_LISTEN } from '../paths.ts';
import { collect, type CliContext } from './context.ts';

export function registerAgentCommand(context: CliContext): void {
  localaiOptions(context.program
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
    .option('--join <source>', 'join the cluster an admin invited this machine to (hangar cluster invite), once: "-" reads the invitation from stdin ($HANGAR_JOIN_TOKEN gives it too; never on the command line); then `hangar agent` alone joins it')
    .option('--cluster <url>', 'join the NATS cluster at nats://HOST:PORT or tls://HOST:PORT')
    .option('--name <name>', 'this node\'s name in the cluster (default: the hostname)')
    .option('--cluster-user <user>', 'NATS user')
    .option('--cluster-password <password>', 'NATS password (default: $HANGAR_CLUSTER_PASSWORD)')
    .option('--cluster-token <token>', 'NATS token (default: $HANGAR_CLUSTER_TOKEN)')
    .option('--cluster-creds <file>', 'NATS .creds file (user JWT and nkey seed)')
    .option('--cluster-ca <file>', 'CA file for a tls:// server')
    .option('--insecure', 'join a non-loopback server without credentials; link a plain http:// LocalAI on another machine', false)
    .option('--cluster-role <role>', 'node: serve this machine only; viewer: watch and call the nodes only (default: both)', parseRole)
    .option('--insecure-any-caller', 'act on every call from the cluster, signed or not: anyone who reaches the NATS server controls this node', false)
    .option('--heartbeat <ms>', 'presence heartbeat interval', parseMs, DEFAULT_HEARTBEAT_MS)
    .option('--call-timeout <ms>', 'how long a call to another node may take', parseMs, DEFAULT_CALL_TIMEOUT_MS)
    .option('--cluster-sweep <seconds>', 'an admin viewer (nats-config --admin): remove the desired versions and rollouts this host does not take once stored this long', parseSweepSeconds)
    .option('--restore-backends', 'start again, models loaded, the backends that ran when the agent last stopped (default: the node\'s settings)', false)
    .option('--label <key=value>', 'a label the cluster selects this node by, as --on label:KEY=VALUE (repeatable; default: the node\'s settings)', collect, []), parseMs)
    .action(async (options: AgentCommandOptions) => {
      const home = await agentHomeDir(options.home ?? context.globals().home);
      const password = options.clusterPassword ?? process.env.HANGAR_CLUSTER_PASSWORD;
      const token = options.clusterToken ?? process.env.HANGAR_CLUSTER_TOKEN;
      const common = {
        caFile: options.clusterCa,
        insecure: options.insecure,
        anyCaller: options.insecureAnyCaller,
        heartbeatMs: options.heartbeat,
        callTimeoutMs: options.callTimeout,
        sweepAfterMs: options.clusterSweep === undefined ? undefined : options.clusterSweep * 1000,
      };
      if (options.join !== undefined && options.cluster !== undefined) throw new CommanderError(2, 'hangar.usage', '--join and --cluster: give one (the invitation names its cluster)');
      // Loaded only here, as the node's code below.
      const invited = options.cluster === undefined ? await (await import('../join-agent.ts')).invitedCluster(home, options.join) : null;
      const cluster = options.cluster === undefined
        ? invited ? { ...common, ...invited.cluster, ...(options.name !== undefined && { name: options.name }), ...roleOption(options.clusterRole) } : undefined
        : {
        ...common,
        url: options.cluster,
        name: options.name ?? hostname(),
        user: options.clusterUser,
        password,
        token: token || undefined,
        credsFile: options.clusterCreds,
        ...roleOption(options.clusterRole),
      };
      const labels = options.label.length > 0 ? Object.fromEntries(options.label.map(labelOption).map((l) => [l.key, l.value])) : invited?.labels;
      // Loaded only here: client commands start faster without the node's code and its dependencies.
      const { runAgent } = await import('../run-agent.ts');
      const localai = await localaiHostOptions(options, options.insecure);
      await runAgent({ ...options, home, galleries: options.gallery, cluster, labels, localai, localaiServer: await localaiServerOptions(options, options.insecure), localaiRun: await localaiRunOptions(options) });
    });
}

interface AgentCommandOptions extends LocalAiCommandOptions {
  home?: string; gallery: string[]; listen: string; token?: string; tokenFile?: string; autoUpgrade: boolean; ports?: string;
  startTimeout?: string; maxInstallSize?: string; stallTimeout?: string; restoreBackends: boolean; label: string[];
  join?: string; cluster?: string; name?: string; clusterUser?: string; clusterPassword?: string; clusterToken?: string; clusterCreds?: string;
  clusterCa?: string; insecure: boolean; clusterRole?: ClusterRole; insecureAnyCaller: boolean; heartbeat: number; callTimeout: number;
  clusterSweep?: number;
}

function labelOption(text: string): { key: string; value: string } {
  try {
    return parseLabel(text);
  } catch (error) {
    throw new CommanderError(2, 'hangar.usage', `--label ${(error as Error).message}`);
  }
}

/** --cluster-role, when given, and that it was: a refusal it causes names it. */
function roleOption(role: ClusterRole | undefined): { role?: ClusterRole; roleFrom?: string } {
  return role === undefined ? {} : { role, roleFrom: `--cluster-role ${role}` };
}

function parseRole(value: string): ClusterRole {
  if (value === 'node' || value === 'viewer' || value === 'node+viewer') return value;
  throw new CommanderError(2, 'hangar.usage', `--cluster-role wants node, viewer or node+viewer, got "${value}"`);
}

/** From a second (tests) to 30 days. */
function parseSweepSeconds(value: string): number {
  const seconds = typedNumber(value);
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 30 * 86_400) throw new CommanderError(2, 'hangar.usage', `--cluster-sweep wants seconds between 1 and 2592000, got "${value}"`);
  return seconds;
}

function parseMs(value: string): number {
  const ms = typedNumber(value);
  if (!Number.isInteger(ms) || ms < 10 || ms > 600_000) throw new CommanderError(2, 'hangar.usage', `wants milliseconds between 10 and 600000, got "${value}"`);
  return ms;
}
