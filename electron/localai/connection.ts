// The LocalAI cluster a host manages, as Settings show and change it: set on the agent's command line (fixed for its
// run), else kept in `<state>/localai.json` (mode 600, written whole) and applied at once. The API key and NATS
// secrets never leave the host: viewers learn only that one is kept, and no message carries one.
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import type { LocalAiJoinRequest } from '../../shared/api.ts';
import { localaiJoin } from '../../shared/schemas.ts';
import type { LocalAiJoin, LocalAiSettingsView, LocalAiStatusView, NodeEvent } from '../../shared/types.ts';
import { KeptSetting, ownerFile } from '../core/kept-setting.ts';
import type { HangarNodes, LocalAiLink } from './workers-link.ts';
import { oneLine } from '../../shared/error-text.ts';

export const LOCALAI_FILE = 'localai.json';

export interface LocalAiConnectionOptions {
  stateDir: string;
  /** Set on the agent's command line: fixed for this run. */
  fixed: LocalAiJoinRequest | null;
  hangar: HangarNodes;
  pollMs?: number;
  reloadWaitMs?: number;
  /** How long a failed connection waits before it is tried again. */
  retryMs?: number;
  /** Where a change in how the link stands is said (default: the agent's stderr). */
  log?: (line: string) => void;
}

export const DEFAULT_POLL_MS = 5000;
export const DEFAULT_RELOAD_WAIT_MS = 30_000;

const FIXED = 'This agent manages the LocalAI cluster it was started with (--localai-frontend); another one takes a restart of the agent.';

/** Emits 'event' (NodeEvent): the workers' cards, jobs, backends and processes. */
export class LocalAiConnection extends EventEmitter<{ event: [NodeEvent] }> {
  private readonly setting: KeptSetting<LocalAiJoinRequest>;
  private current: LocalAiLink | null = null;
  private failure: string | null = null;
  private retry: NodeJS.Timeout | undefined;
  private generation = 0;

  constructor(private readonly options: LocalAiConnectionOptions) {
    super();
    this.setting = new KeptSetting({
      place: ownerFile(join(options.stateDir, LOCALAI_FILE), localaiJoin),
      fixed: options.fixed && { value: options.fixed, reason: FIXED },
      secrets: ['apiKey', 'natsPassword', 'natsToken'],
    });
  }

  /** Reads the kept settings (unless the command line fixed them) and connects; a failure is kept for the status. */
  async start(): Promise<void> {
    await this.setting.load();
    await this.connect();
  }

  link(): LocalAiLink | null {
    return this.current;
  }

  view(): LocalAiSettingsView {
    return { localai: publicJoin(this.setting.get()), fixed: this.setting.fixedReason, status: this.status() };
  }

  async update(next: LocalAiJoinRequest | null): Promise<LocalAiSettingsView> {
    // Kept first: a change that cannot be written is refused, and the link stays as it was.
    await this.setting.save(next);
    await this.disconnect();
    await this.connect();
    return this.view();
  }

  async close(): Promise<void> {
    this.generation++;
    await this.disconnect();
  }

  private status(): LocalAiStatusView | null {
    const join = this.setting.get();
    if (!join) return null;
    if (this.current) return this.current.status();
    return { frontend: join.frontend, connected: false, reason: this.failure, workers: 0, refreshedAt: null };
  }

  private async connect(): Promise<void> {
    clearTimeout(this.retry);
    const join = this.setting.get();
    if (!join) return;
    const generation = ++this.generation;
    try {
      // The NATS client and LocalAI's protocol are loaded only by a host that manages a LocalAI cluster.
      const { joinLocalAi } = await import('./join.ts');
      const link = await joinLocalAi(join, {
        hangar: this.options.hangar,
        // Only the current link speaks: one replaced while it connected is closed unheard.
        onEvent: (event) => generation === this.generation && this.emit('event', event),
        pollMs: this.options.pollMs ?? DEFAULT_POLL_MS,
        log: (line) => generation === this.generation && this.log(line),
        reloadWaitMs: this.options.reloadWaitMs ?? DEFAULT_RELOAD_WAIT_MS,
      });
      if (generation !== this.generation) return void (await link.close());
      this.current = link;
      if (this.failure !== null) this.log(`LocalAI cluster ${join.frontend}: linked`);
      this.failure = null;
    } catch (error) {
      if (generation !== this.generation) return;
      const failure = oneLine(error);
      const retryMs = this.options.retryMs ?? DEFAULT_POLL_MS;
      if (failure !== this.failure) this.log(`LocalAI cluster ${join.frontend}: ${failure}; retrying every ${retryMs / 1000} s`);
      this.failure = failure;
      this.retry = setTimeout(() => void this.connect(), retryMs);
    }
  }

  private log(line: string): void {
    (this.options.log ?? ((text: string) => process.stderr.write(`hangar: ${text}\n`)))(line);
  }

  private async disconnect(): Promise<void> {
    clearTimeout(this.retry);
    const link = this.current;
    this.current = null;
    this.failure = null;
    if (!link) return;
    await link.close();
  }
}

function publicJoin(join: LocalAiJoinRequest | null): LocalAiJoin | null {
  if (!join) return null;
  return {
    frontend: join.frontend,
    hasApiKey: Boolean(join.apiKey),
    nats: join.nats,
    natsUser: join.natsUser ?? null,
    hasNatsPassword: Boolean(join.natsPassword),
    hasNatsToken: Boolean(join.natsToken),
    natsCredsFile: join.natsCredsFile ?? null,
    natsCaFile: join.natsCaFile ?? null,
    insecure: join.insecure === true,
  };
}
