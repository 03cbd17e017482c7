// The host's own settings, not a node's: always asked of the host this page talks to. Each is read when its part of
// Settings opens, checked with the host's own schema before a change is sent, and what changes with it is read again.
import { createStore, useStore, type StoreApi } from 'zustand';
import { LOCAL_NODE, type ClusterJoinRequest, type LocalAiJoinRequest, type LocalAiServerRequest } from '../../../shared/api.ts';
import { requestSchemas } from '../../../shared/schemas.ts';
import type { ClusterSettingsView, LocalAiServerView, LocalAiSettingsView } from '../../../shared/types.ts';
import { refreshProcesses } from './actions.ts';
import { setCards } from './node.ts';
import { bridge } from './session.ts';

interface SafeParse {
  success: boolean;
  error?: { issues: { message: string }[] } | undefined;
}

/** The first reason a schema gives for refusing, or null. */
export function problemOf(checked: SafeParse): string | null {
  return checked.success ? null : (checked.error?.issues[0]?.message ?? 'not valid');
}

interface HostSettingState<View> {
  view: View | null;
  /** When `view` was read (ms since epoch): a link to the agent lost since makes it no word on now. */
  readAt: number | null;
}

export interface HostSetting<View, Request> {
  store: StoreApi<HostSettingState<View>>;
  use<T>(selector: (state: HostSettingState<View>) => T): T;
  load(): Promise<void>;
  change(next: Request | null): Promise<void>;
  /** The first reason the host would refuse `next`, or null. */
  problem(next: Request): string | null;
}

function hostSetting<View, Request>(options: {
  read(): Promise<View>;
  write(next: Request | null): Promise<View>;
  check(next: Request): SafeParse;
  /** Reads again what the change affects. */
  after?(): Promise<void>;
}): HostSetting<View, Request> {
  const store = createStore<HostSettingState<View>>(() => ({ view: null, readAt: null }));
  return {
    store,
    use: (selector) => useStore(store, selector),
    load: async () => store.setState({ view: await options.read(), readAt: Date.now() }),
    change: async (next) => {
      store.setState({ view: await options.write(next), readAt: Date.now() });
      await options.after?.();
    },
    problem: (next) => problemOf(options.check(next)),
  };
}

/** The cluster the host joins: the desktop app joins a change at its next start; an agent's is its command line's. */
export const clusterSetting = hostSetting<ClusterSettingsView, ClusterJoinRequest>({
  read: () => bridge().clusterSettings({ node: LOCAL_NODE }),
  write: (cluster) => bridge().updateClusterSettings({ node: LOCAL_NODE, cluster }),
  check: (cluster) => requestSchemas.updateClusterSettings.safeParse({ node: LOCAL_NODE, cluster }),
});

/** The LocalAI cluster whose workers the host manages: a change connects at once, and workers come and go with it. */
export const localaiSetting = hostSetting<LocalAiSettingsView, LocalAiJoinRequest>({
  read: () => bridge().localaiSettings({ node: LOCAL_NODE }),
  write: (localai) => bridge().updateLocalaiSettings({ node: LOCAL_NODE, localai }),
  check: (localai) => requestSchemas.updateLocalaiSettings.safeParse({ node: LOCAL_NODE, localai }),
  after: async () => setCards(await bridge().nodes({ node: LOCAL_NODE })),
});

/** The LocalAI server beside the host's node: a change links at once, and its models come and go with it. */
export const localaiServerSetting = hostSetting<LocalAiServerView, LocalAiServerRequest>({
  read: () => bridge().localaiServer({ node: LOCAL_NODE }),
  write: (server) => bridge().updateLocalaiServer({ node: LOCAL_NODE, server }),
  check: (server) => requestSchemas.updateLocalaiServer.safeParse({ node: LOCAL_NODE, server }),
  after: refreshProcesses,
});
