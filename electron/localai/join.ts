// Connects a host to a LocalAI cluster: its frontend's admin API and its NATS server. Loaded only by a host that
// manages one: it alone brings in the NATS client for LocalAI.
import { hostname } from 'node:os';
import type { LocalAiJoinRequest } from '../../shared/api.ts';
import type { NodeEvent } from '../../shared/types.ts';
import { connectCluster } from '../nats/connect.ts';
import { FrontendClient } from './frontend-client.ts';
import { LocalAiLink, type HangarNodes } from './workers-link.ts';
import type { WORKER_TIMEOUTS_MS } from './protocol.ts';

export interface JoinLocalAiOptions {
  hangar?: HangarNodes;
  /** Hears the link's events from its first read on. */
  onEvent?: (event: NodeEvent) => void;
  pollMs: number;
  reloadWaitMs: number;
  timeouts?: typeof WORKER_TIMEOUTS_MS;
  /** Told each change in whether the frontend answers, in one line. */
  log?: (line: string) => void;
}

export async function joinLocalAi(join: LocalAiJoinRequest, options: JoinLocalAiOptions): Promise<LocalAiLink> {
  const frontend = new FrontendClient(join.frontend, join.apiKey ?? null);
  const nc = await connectCluster({
    url: join.nats,
    name: `hangar ${hostname()}`,
    user: join.natsUser,
    password: join.natsPassword,
    token: join.natsToken,
    credsFile: join.natsCredsFile,
    caFile: join.natsCaFile,
    insecure: join.insecure,
    flag: '--localai-nats',
  });
  const { onEvent, ...linkOptions } = options;
  const link = new LocalAiLink({ frontend, nc, ...linkOptions });
  if (onEvent) link.on('event', onEvent);
  await link.start();
  return link;
}
