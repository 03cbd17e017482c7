// What a host gives its node: where it lives, where its galleries are, and what it fixes for this run.
import type { GallerySpec } from '../gallery/index.ts';
import type { ExtractLimits } from '../install/limits.ts';
import type { TransferLimits } from '../net/guarded-fetch.ts';
import type { SupervisorOptions } from '../supervisor/index.ts';
import type { CoRunner } from './co-runner.ts';

export interface LocalNodeOptions {
  id?: string;
  name?: string;
  home: string;
  /** Galleries fixed for this run; without them the node reads the galleries of its settings. */
  galleries?: GallerySpec[];
  /** The index.yaml that the gallery location "starter" names: the gallery Hangar ships. */
  starterGallery?: string;
  /** Environment handed to backends so they find a runtime (HANGAR_NODE, ELECTRON_RUN_AS_NODE). */
  runtimeEnv: Record<string, string>;
  fetch?: typeof globalThis.fetch;
  /** Timeouts for every download (default DEFAULT_TRANSFER). */
  transfer?: Partial<TransferLimits>;
  /** What one installed backend may hold (default DEFAULT_LIMITS). */
  installLimits?: Partial<ExtractLimits>;
  capability?: string;
  /**
   * Fixes auto-upgrade for this run: upgrade every upgradable backend when the gallery changes or digests refresh
   * (LocalAI's auto_upgrade_backends). Without it, the node's settings decide.
   */
  autoUpgrade?: boolean;
  /** Fixes "start backends on launch" for this run; without it, the node's settings decide. */
  startBackendsOnLaunch?: boolean;
  /** Fixes the node's labels for this run (`hangar agent --label`); without them, the node's settings decide. */
  labels?: Record<string, string>;
  /** Where the GPU tools are looked for and how often they are asked (tests put fakes on PATH). */
  resources?: { env?: NodeJS.ProcessEnv; refreshMs?: number };
  supervisor?: Partial<Omit<SupervisorOptions, 'backendsDir' | 'modelsDir' | 'stateDir' | 'runtimeEnv'>>;
  /** Another runtime on this machine that runs processes from the node's backend directories (a LocalAI server). */
  coRunner?: CoRunner;
}
