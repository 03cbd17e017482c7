// LocalAI run by this host: its state, asked of the host this page talks to (LocalAI sends no events: read while the
// panel is shown), and what the panel asks of it. A start, install, upgrade or rollback answers once it is done.
import { createStore, useStore } from 'zustand';
import { LOCAL_NODE } from '../../../shared/api.ts';
import { pastCancelText } from '../../../shared/localai-text.ts';
import type { LocalAiAction, LocalAiRefusal, LocalAiRunView } from '../../../shared/types.ts';
import { bridge } from './session.ts';

interface LocalAiRunState {
  view: LocalAiRunView | null;
  /** When `view` was read (ms since epoch): a link lost since makes it no word on LocalAI now (see lostSince). */
  readAt: number | null;
  /** The latest release, once asked for. */
  latest: string | null;
  logs: string[] | null;
}

export const localaiRunStore = createStore<LocalAiRunState>(() => ({ view: null, readAt: null, latest: null, logs: null }));

export function useLocalAiRun<T>(selector: (state: LocalAiRunState) => T): T {
  return useStore(localaiRunStore, selector);
}

const LOG_LINES = 200;

export async function loadLocalAiRun(): Promise<void> {
  localaiRunStore.setState({ view: await bridge().localaiRun({ node: LOCAL_NODE }), readAt: Date.now() });
  if (localaiRunStore.getState().logs !== null) await loadLocalAiLogs();
}

export async function controlLocalAi(action: LocalAiAction): Promise<void> {
  await settle(() => bridge().localaiControl({ node: LOCAL_NODE, action }));
}

/** Installs `version`, or the latest; over a running LocalAI, the gated swap. */
export async function installLocalAi(version?: string): Promise<void> {
  await settle(() => bridge().localaiInstall({ node: LOCAL_NODE, ...(version !== undefined && { version }) }));
}

export async function rollbackLocalAi(): Promise<void> {
  await settle(() => bridge().localaiRollback({ node: LOCAL_NODE }));
}

/** Cancels the install, upgrade or rollback under way; says so when its swap had begun and it goes on. */
export async function cancelLocalAi(): Promise<void> {
  try {
    const answer = await bridge().localaiCancel({ node: LOCAL_NODE });
    if (!answer.cancelled) throw new Error(pastCancelText(answer));
  } finally {
    await loadLocalAiRun().catch(() => undefined);
  }
}

/** Upgrade all on this node (the backends LocalAI's gallery marked among them); says the ones that failed. */
export async function upgradeMarkedBackends(): Promise<string | null> {
  const results = await bridge().upgradeAll({ node: LOCAL_NODE });
  await loadLocalAiRun();
  const failed = results.filter((r) => !r.ok);
  return failed.length === 0 ? null : `Not upgraded: ${failed.map((r) => `${r.backend} (${r.error})`).join(', ')}`;
}

export async function checkLatestLocalAi(): Promise<void> {
  localaiRunStore.setState({ latest: (await bridge().localaiLatest({ node: LOCAL_NODE })).latest });
}

export async function loadLocalAiLogs(): Promise<void> {
  localaiRunStore.setState({ logs: await bridge().localaiLogs({ node: LOCAL_NODE, lines: LOG_LINES }) });
}

export function hideLocalAiLogs(): void {
  localaiRunStore.setState({ logs: null });
}

/** The view after `work`, and after its failure too (which the view's operation then explains). */
async function settle(work: () => Promise<LocalAiRunView>): Promise<void> {
  try {
    localaiRunStore.setState({ view: await work(), readAt: Date.now() });
  } finally {
    await loadLocalAiRun().catch(() => undefined);
  }
}

/**
 * The upgrade to offer: `latest` when it is newer than the version in use, unless Hangar refused it (then `refused`
 * says why, and only an explicit retry installs it). While a check runs, `latest` is the release it last found.
 */
export function upgradeOffer(view: LocalAiRunView, latest: string | null): { offered: string | null; refused: LocalAiRefusal | null } {
  if (view.state === 'not-installed' || latest === null || !isNewer(latest, view.version)) return { offered: null, refused: null };
  const refused = view.refused.find((r) => r.version === latest) ?? null;
  return { offered: refused ? null : latest, refused };
}

/** Whether `latest` is newer than the version in use (vX.Y.Z, compared number by number). */
export function isNewer(latest: string, current: string | null): boolean {
  if (current === null) return true;
  const parts = (tag: string) => tag.replace(/^v/, '').split('.').map(Number);
  const [a, b] = [parts(latest), parts(current)];
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return (a[i] ?? 0) > (b[i] ?? 0);
  return false;
}
