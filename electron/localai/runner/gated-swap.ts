import { oneLine } from '../../../shared/error-text.ts';
// An upgrade (or rollback) of LocalAI itself as a gated swap: its loaded models noted, LocalAI stopped, the binary
// swapped (the one before kept), LocalAI started and waited for on /readyz, the noted models loaded again. Any step
// failing swaps the binary back, starts that one and loads the models there; the error then says why, with LocalAI's
// own last log lines. A LocalAI that was stopped is started only to prove the new build, then stopped again.

export interface SwapSteps {
  running(): boolean;
  /** The models LocalAI has loaded, read now (it loads them lazily: any request may add one). */
  loadedModels(): Promise<string[]>;
  stop(): Promise<void>;
  /** Makes the new build the one in use. */
  swap(): Promise<void>;
  /** Makes the build before it the one in use again. */
  swapBack(): Promise<void>;
  /** Starts LocalAI and resolves once /readyz answers; rejects saying why not (a StartFailed with its own lines). */
  start(): Promise<void>;
  load(model: string): Promise<void>;
  /** The lines the new build wrote, for a failure that is not its start's (a model that did not load on it). */
  logTail(): string[];
  phase(text: string): void;
}

/** A start that failed, with the lines that LocalAI process wrote. */
export class StartFailed extends Error {
  constructor(
    message: string,
    readonly logTail: string[],
  ) {
    super(message);
  }
}

export class SwapFailed extends Error {
  constructor(
    message: string,
    readonly logTail: string[],
  ) {
    super(message);
  }
}

/** Runs the swap; resolves with what it did, or rejects with SwapFailed once the previous build runs again. */
export async function gatedSwap(steps: SwapSteps, what: string): Promise<string> {
  const wasRunning = steps.running();
  steps.phase('noting loaded models');
  const models = wasRunning ? await steps.loadedModels() : [];
  steps.phase('stopping LocalAI');
  await steps.stop();
  steps.phase('swapping the binary');
  await steps.swap();
  try {
    steps.phase('starting LocalAI');
    await steps.start();
    await loadAll(steps, models);
  } catch (error) {
    const why = oneLine(error);
    const tail = error instanceof StartFailed ? error.logTail : steps.logTail();
    steps.phase('rolling back');
    await steps.stop();
    await steps.swapBack();
    const back = await restore(steps, models, wasRunning);
    throw new SwapFailed(`${what} failed: ${why}; rolled back to the previous build${back}`, tail);
  }
  if (!wasRunning) await steps.stop();
  return `${what}${models.length > 0 ? `; models loaded again: ${models.join(', ')}` : ''}${wasRunning ? '' : '; LocalAI started, answered /readyz and was stopped again, as it was'}`;
}

async function loadAll(steps: SwapSteps, models: string[]): Promise<void> {
  for (const model of models) {
    steps.phase(`loading ${model}`);
    await steps.load(model);
  }
}

/** The previous build running again as before, said in words for the error. */
async function restore(steps: SwapSteps, models: string[], wasRunning: boolean): Promise<string> {
  if (!wasRunning) return '';
  try {
    await steps.start();
    await loadAll(steps, models);
    return models.length > 0 ? `, which runs again with ${models.join(', ')}` : ', which runs again';
  } catch (error) {
    return `, which failed too: ${oneLine(error)}`;
  }
}
