import { connect, credsAuthenticator, type ConnectionOptions, type NatsConnection } from '@nats-io/transport-node';
import { readFile } from 'node:fs/promises';
import type { NatsCredentials } from '../../shared/api.ts';
import { isLoopback } from '../../shared/loopback.ts';
import { RECONNECT_JITTER_MS, RECONNECT_WAIT_MS, REVOKED_RETRY_MS } from './reconnect.ts';
import { unreadableFile } from '../core/unreadable-file.ts';
import { messageOf } from '../../shared/error-text.ts';
import { HangarError } from '../../shared/errors.ts';

/** How a node reaches the cluster's NATS server. */
export interface ClusterConnectOptions extends NatsCredentials {
  url: string;
  /** Shown in the server's connection list. */
  name: string;
  /** A `.creds` file's text (an invitation's, before it is kept). */
  creds?: string | undefined;
  /** Where this user's request replies arrive (the server lets only this user subscribe there). */
  inboxPrefix?: string | undefined;
  /** The command-line option that gave the address, for messages (default --cluster). */
  flag?: string | undefined;
  /**
   * What an admin's command did not do when the server cannot be reached ("no invitation was made"): it says so in its
   * own words, as no agent joining the cluster.
   */
  undone?: string | undefined;
  /** Whether the server said this machine was revoked: its client then tries again only every REVOKED_RETRY_MS. */
  revoked?: () => boolean;
}

/** Connects for good: the client reconnects forever after a server restart or a cut link. */
export async function connectCluster(options: ClusterConnectOptions): Promise<NatsConnection> {
  const flag = options.flag ?? '--cluster';
  const url = parseClusterUrl(options.url, flag);
  const hasAuth = Boolean(options.user || options.token || options.credsFile || options.creds);
  if (!hasAuth && !isLoopback(url.hostname) && !options.insecure) {
    throw new HangarError('invalid-request', `refusing to join ${options.url} with no credentials: pass ${flag}-user/${flag}-password, ${flag}-token or ${flag}-creds (or --insecure)`);
  }
  const tls = url.protocol === 'tls:' || options.caFile !== undefined;
  const connection: ConnectionOptions = {
    servers: `${url.hostname.includes(':') ? `[${url.hostname}]` : url.hostname}:${url.port || 4222}`,
    name: options.name,
    maxReconnectAttempts: -1,
    reconnectDelayHandler: () => (options.revoked?.() ? REVOKED_RETRY_MS : RECONNECT_WAIT_MS + Math.floor(Math.random() * (RECONNECT_JITTER_MS + 1))),
    // A server that refuses the credentials after a restart (its configuration changed) is asked again, not given up on.
    ignoreAuthErrorAbort: true,
    pingInterval: 10_000,
    // Otherwise every request builds an Error up front, for a stack trace no message of Hangar's shows: with it off a
    // request and its reply take about half the CPU (20,000 in-process: 321 against 602 ms). Failures keep their class
    // and cause.
    noAsyncTraces: true,
    ...(options.inboxPrefix !== undefined && { inboxPrefix: options.inboxPrefix }),
    ...(options.user !== undefined && { user: options.user, pass: options.password ?? '' }),
    ...(options.token !== undefined && { token: options.token }),
    ...(options.credsFile !== undefined && { authenticator: credsAuthenticator(await readCreds(options.credsFile, options.undone)) }),
    ...(options.creds !== undefined && { authenticator: credsAuthenticator(Buffer.from(options.creds)) }),
    ...(tls && { tls: options.caFile !== undefined ? { caFile: options.caFile } : {} }),
  };
  try {
    return await connect(connection);
  } catch (error) {
    const refused = REFUSED.test(messageOf(error));
    const code = refused ? 'forbidden' : 'failed';
    if (options.undone !== undefined) {
      throw new HangarError(code, `the cluster's server at ${options.url} ${refused ? 'refused this home\'s credentials (authorization violation)' : `does not answer: ${describeConnectError(error)}`}; ${options.undone}`);
    }
    throw new HangarError(code, `cannot join the cluster at ${options.url}: ${refused ? 'the server refused the credentials (authorization violation)' : describeConnectError(error)}`);
  }
}

function parseClusterUrl(text: string, flag: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new HangarError('invalid-request', `${flag} wants nats://HOST:PORT or tls://HOST:PORT, got "${text}"`);
  }
  if (url.protocol !== 'nats:' && url.protocol !== 'tls:') throw new HangarError('invalid-request', `${flag} wants nats://HOST:PORT or tls://HOST:PORT, got "${text}"`);
  if (url.username || url.password) throw new HangarError('invalid-request', `put the NATS credentials in ${flag}-user/${flag}-password, not in the URL`);
  return url;
}

/**
 * The file read and its credential parsed before connecting: a damaged one is the file's fault, not the server's.
 * `undone`, as connectCluster's: said after why the file could not be used.
 */
async function readCreds(file: string, undone: string | undefined): Promise<Uint8Array> {
  const then = (error: HangarError) => (undone === undefined ? error : new HangarError(error.code, `${error.message}; ${undone}`));
  const creds = await readFile(file).catch((error: NodeJS.ErrnoException) => {
    throw then(unreadableFile(`the creds file ${file}`, error));
  });
  try {
    credsAuthenticator(creds)();
  } catch (error) {
    throw then(new HangarError('bad-input', `the creds file ${file} is damaged (${messageOf(error)}): take it again from whoever made it`));
  }
  return creds;
}

const REFUSED = /authorization violation|authentication/i;

function describeConnectError(error: unknown): string {
  const message = messageOf(error);
  // The client gives the socket's error as the cause of its own.
  const codes = [error, (error as { cause?: unknown } | null)?.cause].map((e) => (e as { code?: string } | null | undefined)?.code);
  if (/ECONNREFUSED/.test(message) || codes.includes('ECONNREFUSED')) return 'connection refused (is nats-server running there?)';
  return message.split('\n')[0]!;
}
