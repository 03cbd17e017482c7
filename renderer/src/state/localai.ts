// The LocalAI cluster whose workers the host manages: the host's setting, not a node's, asked of the host this page
// talks to. A change connects at once; the node list is read again so workers come and go with it.
import { createStore, useStore } from 'zustand';
import { LOCAL_NODE, type LocalAiJoinRequest } from '../../../shared/api.ts';
import { requestSchemas } from '../../../shared/schemas.ts';
import type { LocalAiSettingsView } from '../../../shared/types.ts';
import { setCards } from './node.ts';
import { bridge } from './session.ts';

export const localaiStore = createStore<{ view: LocalAiSettingsView | null }>(() => ({ view: null }));

export function useLocalAi<T>(selector: (state: { view: LocalAiSettingsView | null }) => T): T {
  return useStore(localaiStore, selector);
}

export async function loadLocalAi(): Promise<void> {
  localaiStore.setState({ view: await bridge().localaiSettings({ node: LOCAL_NODE }) });
}

export async function changeLocalAi(localai: LocalAiJoinRequest | null): Promise<void> {
  localaiStore.setState({ view: await bridge().updateLocalaiSettings({ node: LOCAL_NODE, localai }) });
  setCards(await bridge().nodes({ node: LOCAL_NODE }));
}

/** The first reason the host would refuse `request`, checked with its own schema before anything is sent. */
export function localaiProblem(request: LocalAiJoinRequest): string | null {
  const checked = requestSchemas.updateLocalaiSettings.safeParse({ node: LOCAL_NODE, localai: request });
  return checked.success ? null : (checked.error.issues[0]?.message ?? 'not valid');
}
