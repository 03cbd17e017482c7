// The LocalAI server beside this host's node: the host's setting, asked of the host this page talks to. A change links
// at once; the processes are read again so its models come and go with it.
import { createStore, useStore } from 'zustand';
import { LOCAL_NODE, type LocalAiServerRequest } from '../../../shared/api.ts';
import { requestSchemas } from '../../../shared/schemas.ts';
import type { LocalAiServerView } from '../../../shared/types.ts';
import { refreshProcesses } from './actions.ts';
import { bridge } from './session.ts';

export const localaiServerStore = createStore<{ view: LocalAiServerView | null }>(() => ({ view: null }));

export function useLocalAiServer<T>(selector: (state: { view: LocalAiServerView | null }) => T): T {
  return useStore(localaiServerStore, selector);
}

export async function loadLocalAiServer(): Promise<void> {
  localaiServerStore.setState({ view: await bridge().localaiServer({ node: LOCAL_NODE }) });
}

export async function changeLocalAiServer(server: LocalAiServerRequest | null): Promise<void> {
  localaiServerStore.setState({ view: await bridge().updateLocalaiServer({ node: LOCAL_NODE, server }) });
  await refreshProcesses();
}

/** The first reason the host would refuse `request`, checked with its own schema before anything is sent. */
export function localaiServerProblem(request: LocalAiServerRequest): string | null {
  const checked = requestSchemas.updateLocalaiServer.safeParse({ node: LOCAL_NODE, server: request });
  return checked.success ? null : (checked.error.issues[0]?.message ?? 'not valid');
}
