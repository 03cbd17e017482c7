// Whether each backend process of LocalAI's seen on this machine still answers. LocalAI lists a model as loaded for as
// long as its process lives, hung or not; Hangar asks the process Health itself, as it asks its own. Only a call that
// reached the process and got no answer in time says it hangs: a refused connection (a LocalAI in a container, whose
// ports are in its own network) says nothing either way.
import { BackendCallError, BackendClient } from '../../core/supervisor/index.ts';
import type { ServerProcess } from './processes.ts';

const DEADLINE_EXCEEDED = 4;
const UNAVAILABLE = 14;

interface Asked {
  client: BackendClient;
  /** When it first gave no answer in time, since its last answer; null while it answers. */
  silentSince: Date | null;
}

export class ProcessHealth {
  private readonly asked = new Map<string, Asked>();
  private round: Promise<boolean> | null = null;

  constructor(private readonly timeoutMs: number) {}

  /** Why `process` is not ready ("no Health answer within 2000 ms since 12:00:01 UTC"), or null. */
  silence(process: ServerProcess | null): string | null {
    const since = process && this.asked.get(keyOf(process))?.silentSince;
    return since ? `its process (pid ${process.pid}) gives no Health answer within ${this.timeoutMs} ms (since ${since.toISOString().slice(11, 19)} UTC); LocalAI still lists the model loaded` : null;
  }

  /** Asks each process Health once, unless a round is under way; true when what a row says changed. */
  probe(processes: ServerProcess[]): Promise<boolean> {
    this.round ??= this.ask(processes).finally(() => (this.round = null));
    return this.round;
  }

  close(): void {
    for (const { client } of this.asked.values()) client.close();
    this.asked.clear();
  }

  private async ask(processes: ServerProcess[]): Promise<boolean> {
    const listening = processes.filter((p) => p.port > 0);
    const current = new Set(listening.map(keyOf));
    for (const [key, { client }] of this.asked) {
      if (current.has(key)) continue;
      client.close();
      this.asked.delete(key);
    }
    const changes = await Promise.all(listening.map(async (process) => {
      const key = keyOf(process);
      const asked = this.asked.get(key) ?? { client: new BackendClient(`127.0.0.1:${process.port}`), silentSince: null };
      this.asked.set(key, asked);
      const askedAt = new Date();
      const hangs = await asked.client.health(this.timeoutMs).then(() => false, hangsBy);
      if (hangs === null || hangs === (asked.silentSince !== null)) return false;
      asked.silentSince = hangs ? askedAt : null;
      return true;
    }));
    return changes.some(Boolean);
  }
}

/** A refusal is an answer too (a backend that wants LocalAI's token); a connection that cannot be made is none. */
function hangsBy(error: unknown): boolean | null {
  if (!(error instanceof BackendCallError)) return null;
  if (error.grpcCode === DEADLINE_EXCEEDED) return true;
  return error.grpcCode === UNAVAILABLE ? null : false;
}

function keyOf(process: ServerProcess): string {
  return `${process.pid}:${process.port}:${process.startedAt ?? ''}`;
}
