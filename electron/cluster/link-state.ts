// The host's connection to the NATS server, as its viewers are told of it: up, or lost (and why) while the client
// keeps retrying. The server's complaints (permission violations, refused credentials) go to the health record.
import { EventEmitter } from 'node:events';
import type { ClusterStatusView } from '../../shared/types.ts';
import type { ClusterHealth } from './health.ts';
import { REVOKED } from '../../shared/cluster-link.ts';

type LinkView = ClusterStatusView['link'];

export class LinkState extends EventEmitter<{ change: [LinkView] }> {
  private state: LinkView = { connected: true, since: new Date().toISOString(), reason: null };
  private wasRevoked = false;

  view(): LinkView {
    return { ...this.state };
  }

  get connected(): boolean {
    return this.state.connected;
  }

  /** Whether the server closed the link saying this machine was revoked (until a reconnect succeeds after all). */
  get revoked(): boolean {
    return this.wasRevoked;
  }

  /** Follows the client's status feed until the connection closes. */
  async follow(status: AsyncIterable<{ type: string; server?: string; error?: Error }>, health: ClusterHealth): Promise<void> {
    for await (const event of status) {
      if (event.type === 'error' && event.error) {
        // Once revoked, the link's reason says so; each try to reconnect is refused the same, and none is counted.
        if (/authentication revoked/i.test(event.error.message)) this.wasRevoked = true;
        if (this.wasRevoked) {
          this.set(false, REVOKED);
          continue;
        }
        health.violation(event.error.message);
        if (!this.state.connected) this.set(false, refusal(event.error.message));
      } else if (event.type === 'disconnect') {
        this.set(false, this.wasRevoked ? REVOKED : `the NATS server at ${event.server ?? 'its address'} cannot be reached`);
      } else if (event.type === 'reconnect') {
        this.wasRevoked = false;
        this.set(true, null);
      }
    }
  }

  private set(connected: boolean, reason: string | null): void {
    if (connected === this.state.connected && reason === this.state.reason) return;
    const since = connected === this.state.connected ? this.state.since : new Date().toISOString();
    this.state = { connected, since, reason };
    this.emit('change', this.view());
  }
}

function refusal(message: string): string {
  return /authoriz|authentic/i.test(message) ? `the NATS server refused this host's credentials (${message.split('\n')[0]})` : message.split('\n')[0]!;
}
