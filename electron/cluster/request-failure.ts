import { HangarError } from '../../shared/errors.ts';

/** Why a request to a node got no usable reply, told apart so the host can say it in words. */
export class RequestFailure extends Error {
  constructor(readonly reason: 'timeout' | 'no-responders' | 'refused' | 'other', message: string) {
    super(message);
  }
}

/**
 * A call that got no answer because the link could not carry it (this host lost the broker, the node did not answer
 * or is not connected): the node may well be working on. What waits for a node (a rollout's step) tries again.
 */
export class NodeUnreachable extends HangarError {
  constructor(message: string) {
    super('failed', message);
  }
}
