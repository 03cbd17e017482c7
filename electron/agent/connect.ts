import WebSocket from 'ws';
import { createWireClient, type SocketLike, type WireClient } from '../../shared/wire-client.ts';
import { tokenProtocol, WS_PATH, WS_PROTOCOL } from '../../shared/wire.ts';
import { DEFAULT_LISTEN, readAgentUrl, readToken } from './paths.ts';
import { HangarError } from '../../shared/errors.ts';

export interface ConnectOptions {
  node?: string;
  token?: string;
  home: string;
}

/** Opens a WireClient to an agent: URL from --node or the home's running agent; token from --token, HANGAR_TOKEN or the home. */
export async function connect(options: ConnectOptions): Promise<WireClient> {
  if (options.node !== undefined && !(URL.canParse(options.node) && /^(https?|wss?):$/.test(new URL(options.node).protocol))) {
    throw new HangarError('invalid-request', `--node wants the agent's URL, http://HOST:PORT, got ${JSON.stringify(options.node)}`);
  }
  const running = await readAgentUrl(options.home);
  const url = options.node ?? running ?? `http://${DEFAULT_LISTEN}`;
  const token = options.token ?? process.env.HANGAR_TOKEN ?? (await readToken(options.home));
  // A token not given is a missing argument; no agent to ask for one is a node that cannot be reached.
  if (!token && (options.node || running)) {
    throw new HangarError('invalid-request', `no token for ${url}: pass --token, set HANGAR_TOKEN, or give the --home of the agent, which keeps it`);
  }
  if (!token) throw noAgent(options.home);
  const wsUrl = new URL(WS_PATH, url.replace(/^http/, 'ws')).href;
  const socket = new WebSocket(wsUrl, [WS_PROTOCOL, tokenProtocol(token)]);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', (error: NodeJS.ErrnoException) => {
      // An agent killed (or its machine stopped) leaves its address in its home: nothing listens there any more.
      if (!options.node && error.code === 'ECONNREFUSED') reject(noAgent(options.home, running === null ? null : url));
      else reject(new Error(`cannot reach the agent at ${url}: ${error.message}`));
    });
  });
  const client = createWireClient(socket as unknown as SocketLike);
  // The agent accepts the upgrade, then closes with 4401 on a bad token; a first round trip surfaces that (a call
  // after the close fails with why it closed).
  await Promise.race([client.info({ node: 'local' }), client.closed.then(() => client.ping())]);
  return client;
}

/** `left`: the address an agent that did not close left in the home. */
function noAgent(home: string, left: string | null = null): HangarError {
  const gone = left === null ? '' : `the one at ${left} stopped without closing; `;
  return new HangarError('failed', `no agent runs on ${home}: ${gone}start one with \`hangar agent --home ${home}\`, or pass --node and --token`);
}
