// How long a backend's start (spawn to its first Health answer) and its model's LoadModel may take. A GPU build that
// imports torch or maps a large model can take minutes: the node's setting (10 min by default), a backend's own over
// it, a model's own (`load --start-timeout`, or its LocalAI config) over both, and never less than twice the longest
// this node has seen that backend take, kept across restarts in state/start-times.json, so a build that once needed
// five minutes is given ten whatever the setting says.
import { join } from 'node:path';
import { CoalescedFile } from '../coalesced-file.ts';

export type Phase = 'start' | 'load';

type Longest = Record<Phase, Record<string, number>>;

/** A start is given at least this many times the longest one seen. */
const MARGIN = 2;

export class StartBudget {
  private longest: Longest = { start: {}, load: {} };
  private readonly file: CoalescedFile<Longest>;
  private readonly loaded: Promise<void>;
  private perBackendMs: Record<string, number> = {};

  constructor(
    stateDir: string,
    private timeoutMs: number,
  ) {
    this.file = new CoalescedFile(join(stateDir, 'start-times.json'));
    this.loaded = this.file.read().then((raw) => {
      const kept = raw as Partial<Longest> | null;
      for (const phase of ['start', 'load'] as const) {
        const times = kept?.[phase];
        if (typeof times === 'object' && times !== null) this.longest[phase] = Object.fromEntries(Object.entries(times).filter((e): e is [string, number] => Number.isFinite(e[1])));
      }
    });
  }

  ready(): Promise<void> {
    return this.loaded;
  }

  setTimeout(ms: number, perBackendMs: Record<string, number>): void {
    this.timeoutMs = ms;
    this.perBackendMs = perBackendMs;
  }

  /** How long `phase` of `backend` may take: the model's limit, the backend's or the node's; at least twice its longest. */
  allowed(phase: Phase, backend: string, own: number | null): number {
    return Math.max(own ?? this.perBackendMs[backend] ?? this.timeoutMs, MARGIN * (this.longest[phase][backend] ?? 0));
  }

  /** The longest `phase` of `backend` took here, or null when it never ran. */
  last(phase: Phase, backend: string): number | null {
    return this.longest[phase][backend] ?? null;
  }

  record(phase: Phase, backend: string, ms: number): void {
    if (ms <= (this.longest[phase][backend] ?? 0)) return;
    this.longest = { ...this.longest, [phase]: { ...this.longest[phase], [backend]: Math.round(ms) } };
    this.file.save(this.longest);
  }

  flush(): Promise<void> {
    return this.file.flush().catch(() => undefined);
  }
}
