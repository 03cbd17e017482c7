/** Why a request to a node got no usable reply, told apart so the host can say it in words. */
export class RequestFailure extends Error {
  constructor(readonly reason: 'timeout' | 'no-responders' | 'refused' | 'other', message: string) {
    super(message);
  }
}
