import { rm } from 'node:fs/promises';
import { parseSize } from '../core/install/index.ts';
import type { TransferLimits } from '../core/net/index.ts';
import { startHost, startNode, type Host, type JoinOptions, type LocalAiHostOptions, type NodeSetup } from '../fleet/start.ts';
import type { GallerySpec } from '../core/gallery/index.ts';
import { lockHome } from '../core/home-lock.ts';
import { writeFileAtomic } from '../core/state-file.ts';
import { agentFile, agentToken, rendererDir, starterGallery, tokenFile } from './paths.ts';
import { logClusterLink } from './link-log.ts';
import { startAgentServer } from './server.ts';
import { HangarError } from '../../shared/errors.ts';
import { holdsPassword } from '../../shared/url-password.ts';
import { typedNumber } from './typed-number.ts';

export interface AgentOptions {
  home: string;
  galleries: string[];
  listen: string;
  token?: string | undefined;
  tokenFile?: string | undefined;
  autoUpgrade: boolean;
  ports?: string | undefined;
  maxInstallSize?: string | undefined;
  startTimeout?: string | undefined;
  stallTimeout?: string | undefined;
  /** Join this NATS cluster as a member. */
  cluster?: JoinOptions | undefined;
  /** The LocalAI cluster whose workers it manages. */
  localai?: LocalAiHostOptions | undefined;
  /** The LocalAI server beside its node. */
  localaiServer?: NodeSetup['localaiServer'];
  /** LocalAI run by the agent: --localai-bin, --localai-releases, --localai-models. */
  localaiRun?: { binary?: string | undefined; releases?: string | undefined; modelsPath?: string | undefined } | undefined;
  restoreBackends?: boolean;
  /** Fixes the node's labels for this run (--label KEY=VALUE). */
  labels?: Record<string, string> | undefined;
}

/**
 * `hangar agent`: one node served over HTTP + WebSocket until SIGTERM/SIGINT. The home's lock comes first: a
 * second host on the same home leaves at once (HomeBusyError) having read and written nothing there.
 */
export async function runAgent(options: AgentOptions): Promise<void> {
  const { host, port } = parseListen(options.listen);
  const ports = options.ports !== undefined ? parsePorts(options.ports) : undefined;
  const lock = await lockHome(options.home);
  // A warning (a state file that cannot be written) is one line, like the agent's other messages.
  process.removeAllListeners('warning');
  process.on('warning', (warning) => process.stderr.write(`hangar: warning: ${warning.message}\n`));
  const token = await agentToken(options.home, { token: options.token, tokenFile: options.tokenFile });
  const galleries: GallerySpec[] = options.galleries.map(gallerySpec);
  // What the command line gives is fixed for this run; the rest comes from the node's settings.
  const { node, localaiServer, localaiRunner, recovered } = await startNode({
    home: options.home,
    ...(options.cluster && { name: options.cluster.name }),
    ...(galleries.length > 0 && { galleries }),
    starterGallery,
    runtimeEnv: { HANGAR_NODE: process.execPath },
    ...(options.autoUpgrade && { autoUpgrade: true }),
    ...(options.restoreBackends && { startBackendsOnLaunch: true }),
    ...(options.labels && { labels: options.labels }),
    ...(options.maxInstallSize !== undefined && { installLimits: { maxBytes: parseSize(options.maxInstallSize) } }),
    ...(options.stallTimeout !== undefined && { transfer: stallLimits(options.stallTimeout) }),
    // LocalAI's variable: when set, backends require it and Hangar presents it on every backend call.
    supervisor: {
      grpcToken: process.env.LOCALAI_GRPC_AUTH_TOKEN || undefined,
      ...(ports !== undefined && { portRange: ports }),
      ...(options.startTimeout !== undefined && { startTimeoutMs: startTimeout(options.startTimeout) }),
    },
    localaiServer: options.localaiServer,
    localaiRun: {
      ...options.localaiRun,
      ...(options.stallTimeout !== undefined && { transfer: stallLimits(options.stallTimeout) }),
      ...(options.startTimeout !== undefined && { readyTimeoutMs: startTimeout(options.startTimeout) }),
      loadTimeoutMs: options.localai?.reloadWaitMs,
    },
  });
  for (const line of recovered) process.stderr.write(`hangar: recovered: ${line}\n`);
  const hangar = await startHost({ node, home: options.home, stateDir: node.stateDir, cluster: options.cluster, localai: options.localai, localaiServer, localaiRunner }).catch(async (error: unknown) => {
    await node.close({ stopBackends: false });
    throw error;
  });
  const server = await startAgentServer({ node: hangar, token, host, port, staticDir: rendererDir }).catch(async (error: unknown) => {
    // Backends adopted from a previous run stay running for the next host (the reaper is released, not fired).
    await hangar.close();
    await node.close({ stopBackends: false });
    throw error;
  });
  if (options.cluster) await sayClusterTrust(hangar, options.cluster.grantors?.length ?? 0);
  logClusterLink(hangar, (line) => process.stderr.write(line));
  lock.serving(server.url);

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => {
      process.stderr.write(`hangar: shutdown did not finish within ${SHUTDOWN_LIMIT_MS / 1000} s; leaving anyway\n`);
      process.exit(1);
    }, SHUTDOWN_LIMIT_MS).unref();
    // Each step runs whatever became of the one before: a connection that will not close, or a state file that
    // cannot be written, never keeps the backends running or the agent alive.
    const done = [
      await step('closing connections', () => server.close()),
      await step('leaving the cluster', () => hangar.close()),
      await step('stopping LocalAI', () => localaiRunner.close()),
      await step('stopping the backends', () => node.close()),
      await step('removing agent.json', () => rm(agentFile(options.home), { force: true })),
      await step('releasing the home', () => lock.release()),
    ];
    process.exit(done.every(Boolean) ? 0 : 1);
  };
  process.on('SIGTERM', () => void stop());
  process.on('SIGINT', () => void stop());
  // The terminal that ran it closed: it goes with it, as keep-running says, rather than live on under init.
  process.on('SIGHUP', () => void stop());

  await writeFileAtomic(agentFile(options.home), JSON.stringify({ url: server.url, pid: process.pid }) + '\n', { mode: 0o600 }).catch((error: Error) =>
    process.stderr.write(`hangar: warning: ${error.message}: \`hangar\` finds this agent only with --node ${server.url}\n`),
  );
  process.stdout.write(`hangar agent listening on ${server.url}\n`);
  const { localaiAutostart } = (await node.settings({ node: 'local' })).settings;
  void localaiRunner.launch(localaiAutostart).catch((error: unknown) => process.stderr.write(`hangar: LocalAI did not start: ${(error as Error).message}\n`));
  process.stderr.write(`hangar: processes: ${node.processTracking}\n`);
  // Serving already: what the app asks for first (its Backends view, then its gallery), then what the first load
  // needs, are made ready now, on idle turns, not when a user waits for them. The backends go first: their listing is
  // what a client (the app, `hangar ls`) waits on. Each later step waits until the calls of a client just connected
  // are done: the gallery's views take the agent's thread for tens of ms at thousands of entries (a `hangar ls` would
  // wait them out for nothing), and loading gRPC for a few hundred.
  const whenQuiet = () => server.quiet(WARM_UP_QUIET_MS);
  setImmediate(() =>
    void node
      .backends({ node: 'local' })
      .catch(() => undefined)
      .then(whenQuiet)
      .then(() => node.gallery({ node: 'local' }))
      .catch(() => undefined)
      .then(whenQuiet)
      .then(() => node.warmUp())
      .catch(() => undefined),
  );
  // The token goes only to a person's terminal, never into a log file that captured stderr.
  const opening = process.stderr.isTTY ? `${server.url}/#token=${token}` : `${server.url} (token in ${tokenSource(options)})`;
  process.stderr.write(`hangar: open ${opening}\n`);
}

const SHUTDOWN_LIMIT_MS = 30_000;
/** Calls a client makes on connecting come back to back; this long without one, it has what it asked for. */
const WARM_UP_QUIET_MS = 150;

/** Runs one step of the shutdown; a failure is said on stderr and the shutdown goes on. */
async function step(what: string, work: () => Promise<unknown>): Promise<boolean> {
  try {
    await work();
    return true;
  } catch (error) {
    process.stderr.write(`hangar: ${what}: ${(error as Error).message}\n`);
    return false;
  }
}

/** Who may act on this node from the cluster, said once at start; `grantors`: the admins whose grants it takes. */
async function sayClusterTrust(hangar: Host, grantors: number): Promise<void> {
  const status = await hangar.clusterStatus({ node: 'local' });
  if (status.role === 'viewer') return;
  const who = status.openToAnyCaller
    ? 'warning: --insecure-any-caller: this node acts on every call from the cluster, signed or not'
    : grantors > 0
      ? `this node acts on calls signed by the viewers its cluster's admins granted (hangar cluster members, on an admin), and by the keys of its trust list`
      : status.trusted === 0
      ? 'this node trusts no viewer key yet: only this host calls it (on a viewer, `hangar cluster key`; here, `hangar cluster trust KEY`)'
      : `this node acts on calls signed by ${status.trusted} trusted viewer key${status.trusted === 1 ? '' : 's'}`;
  process.stderr.write(`hangar: cluster: node ${status.id}: ${who}\n`);
}

function tokenSource(options: AgentOptions): string {
  if (options.token !== undefined) return '--token';
  if (options.tokenFile !== undefined) return options.tokenFile;
  return process.env.HANGAR_TOKEN ? '$HANGAR_TOKEN' : tokenFile(options.home);
}

function stallLimits(text: string): Partial<TransferLimits> {
  const ms = typedNumber(text, { fraction: true }) * 1000;
  if (!(ms >= 1000)) throw new HangarError('invalid-request', `--stall-timeout wants seconds (at least 1), got "${text}"`);
  return { headersMs: ms, lowSpeedWindowMs: ms };
}

function startTimeout(text: string): number {
  const seconds = typedNumber(text);
  if (!Number.isInteger(seconds) || seconds < 10 || seconds > 86_400) throw new HangarError('invalid-request', `--start-timeout wants whole seconds from 10 to 86400, got "${text}"`);
  return seconds * 1000;
}

function parsePorts(ports: string): [number, number] {
  const match = /^(\d{1,5})-(\d{1,5})$/.exec(ports);
  const [from, to] = [Number(match?.[1]), Number(match?.[2])];
  if (!match || from < 1024 || to > 65535 || from > to) throw new HangarError('invalid-request', `--ports wants FROM-TO within 1024-65535, got "${ports}"`);
  return [from, to];
}

function parseListen(listen: string): { host: string; port: number } {
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(listen);
  const port = Number(match?.[2]);
  if (!match || port > 65535) throw new HangarError('invalid-request', `--listen wants HOST:PORT, got "${listen}"`);
  return { host: match[1]!.replace(/^\[|\]$/g, ''), port };
}

/** `NAME=LOCATION` names a gallery; a bare location (a path or URL) gets a name derived from it. */
export function gallerySpec(option: string): GallerySpec {
  if (holdsPassword(option)) {
    throw new HangarError('invalid-request', '--gallery: a command line is readable by every user of this machine, and this location holds a password: add the gallery with hangar galleries add - [NAME], which reads it from stdin');
  }
  const named = /^([A-Za-z0-9][A-Za-z0-9._-]*)=(.+)$/.exec(option);
  return named ? { name: named[1]!, location: named[2]! } : { location: option };
}
