// LocalAI's install, upgrade or rollback, one at a time. It is under way from the moment it is asked for, before it
// waits its turn: anything else asked of LocalAI meanwhile is refused at once (exit 4, as for a backend's job) saying
// what runs and how to follow or cancel it, rather than waiting silently behind a download. It can be cancelled until
// its swap begins (the download, which leaves LocalAI as it was); past that point it goes on.
import { HangarError } from '../../../shared/errors.ts';
import { oneLine } from '../../../shared/error-text.ts';
import type { LocalAiCancel, LocalAiOperation, LocalAiRefusal } from '../../../shared/types.ts';
import { Refused } from './download.ts';
import { StartFailed, SwapFailed } from './gated-swap.ts';

export interface OperationContext {
  /** Aborted by a cancel: the download stops. */
  signal: AbortSignal;
  phase(text: string): void;
  /** What a cancel from now on would leave, in words ("nothing was installed"). */
  ifCancelled(text: string): void;
  /** The swap begins: from here it cannot be cancelled. A cancel that came first ends it here. */
  commit(): void;
}

interface Running {
  view: LocalAiOperation;
  abort: AbortController;
  committed: boolean;
  ifCancelled: string;
  ended: Promise<void>;
}

export class Operations {
  private current: Running | null = null;
  private last: LocalAiOperation | null = null;
  private readonly refusals = new Map<string, LocalAiRefusal>();

  view(): LocalAiOperation | null {
    const operation = this.current?.view ?? this.last;
    return operation && { ...operation, cancellable: this.current !== null && !this.current.committed, logTail: [...operation.logTail] };
  }

  refused(): LocalAiRefusal[] {
    return [...this.refusals.values()].map((refusal) => ({ ...refusal }));
  }

  /** `tag` was downloaded and passed the checks: a refusal of it before (its checksums file fixed since) holds no more. */
  accepted(tag: string): void {
    this.refusals.delete(tag);
  }

  /** Refuses what would wait behind the operation under way. */
  refuseBusy(): void {
    const view = this.current?.view;
    if (view) throw new HangarError('conflict', `a LocalAI ${view.kind} is under way (${view.phase}): hangar localai status follows it, hangar localai cancel cancels it`);
  }

  /**
   * Runs `work` as an operation of `kind`, under way from now; `turn` runs it once its turn comes (the runner's lock).
   * Resolves with what it did; its failure or cancel is kept in the view, told to `say`, and thrown.
   */
  run(kind: LocalAiOperation['kind'], turn: (work: () => Promise<void>) => Promise<void>, work: (context: OperationContext) => Promise<string>, say: (line: string) => void): Promise<void> {
    this.refuseBusy();
    const view: LocalAiOperation = { kind, state: 'running', phase: 'waiting for its turn', cancellable: true, message: null, logTail: [], startedAt: new Date().toISOString(), finishedAt: null };
    const abort = new AbortController();
    let settle!: () => void;
    const running: Running = { view, abort, committed: false, ifCancelled: `cancelled the LocalAI ${kind}: nothing was changed`, ended: new Promise<void>((resolve) => (settle = resolve)) };
    this.current = running;
    const context: OperationContext = {
      signal: abort.signal,
      phase: (text) => (view.phase = text),
      ifCancelled: (text) => (running.ifCancelled = text),
      commit: () => {
        abort.signal.throwIfAborted();
        running.committed = true;
      },
    };
    return turn(async () => {
      abort.signal.throwIfAborted();
      view.phase = 'starting';
      view.message = await work(context);
      view.state = 'done';
      say(view.message);
    })
      .catch((error: unknown) => {
        const cancelled = abort.signal.aborted && !running.committed;
        view.state = cancelled ? 'cancelled' : 'failed';
        view.message = cancelled ? running.ifCancelled : error instanceof Refused ? error.full : oneLine(error);
        if (!cancelled && (error instanceof SwapFailed || error instanceof StartFailed)) view.logTail = error.logTail;
        if (error instanceof Refused) this.refusals.set(error.release, { version: error.release, reason: error.why, at: new Date().toISOString() });
        say(cancelled ? view.message : `LocalAI ${kind} failed: ${view.message}`);
        throw new HangarError(cancelled || !(error instanceof HangarError) ? 'failed' : error.code, cancelled ? view.message : oneLine(error));
      })
      .finally(() => {
        view.phase = view.state;
        view.finishedAt = new Date().toISOString();
        this.last = view;
        this.current = null;
        settle();
      });
  }

  /** Cancels the operation under way if its swap has not begun, and waits for it to end. */
  async cancel(why = 'cancelled'): Promise<LocalAiCancel> {
    const running = this.current;
    if (!running) throw new HangarError('conflict', 'no LocalAI install, upgrade or rollback is under way: nothing to cancel');
    const { kind, phase } = running.view;
    if (running.committed) return { kind, cancelled: false, phase, message: null };
    running.abort.abort(new HangarError('failed', why));
    await running.ended;
    return { kind, cancelled: true, phase, message: running.view.message };
  }

  /** The agent is leaving: an operation not yet swapping is cancelled, one swapping is waited for. */
  async close(): Promise<void> {
    const running = this.current;
    if (running && !running.committed) running.abort.abort(new HangarError('failed', 'the agent is stopping'));
    await running?.ended;
  }
}
