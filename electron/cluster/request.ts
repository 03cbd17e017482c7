import type { NatsConnection } from '@nats-io/transport-node';
import { callSubject } from './subjects.ts';

/** Why a request to a node got no reply, told apart so the host can say it in words. */
export class RequestFailure extends Error {
  constructor(readonly reason: 'timeout' | 'no-responders' | 'other', message: string) {
    super(message);
  }
}

/** A request to a node's call subject over the NATS client, loaded only when this host is in a cluster. */
export async function natsRequester(nc: NatsConnection): Promise<(id: string, data: string, timeoutMs: number) => Promise<string>> {
  const { RequestError, TimeoutError } = await import('@nats-io/transport-node');
  return async (id, data, timeoutMs) => {
    try {
      return (await nc.request(callSubject(id), data, { timeout: timeoutMs })).string();
    } catch (error) {
      if (error instanceof TimeoutError || (error as Error).cause instanceof TimeoutError) throw new RequestFailure('timeout', 'timeout');
      if (error instanceof RequestError && error.isNoResponders()) throw new RequestFailure('no-responders', 'no responders');
      throw new RequestFailure('other', (error as Error).message);
    }
  };
}
