// Settings → Cluster's invitations: the host's home, asked of the host this page talks to. A made invitation is not
// kept here: it holds a machine's credential, so only the form that asked for it shows it.
import { createStore, useStore } from 'zustand';
import { LOCAL_NODE, type ClusterInviteRequest } from '../../../shared/api.ts';
import { requestSchemas } from '../../../shared/schemas.ts';
import { problemOf } from './host-settings.ts';
import type { ClusterInvitation, ClusterInvitationsView } from '../../../shared/types.ts';
import { bridge } from './session.ts';

export const invitationsStore = createStore<{ view: ClusterInvitationsView | null }>(() => ({ view: null }));

export function useInvitations<T>(selector: (state: { view: ClusterInvitationsView | null }) => T): T {
  return useStore(invitationsStore, selector);
}

export async function loadInvitations(): Promise<void> {
  invitationsStore.setState({ view: await bridge().clusterInvitations({ node: LOCAL_NODE }) });
}

export function makeInvitation(request: ClusterInviteRequest): Promise<ClusterInvitation> {
  return bridge().clusterInvite({ node: LOCAL_NODE, ...request });
}

export async function joinWith(token: string): Promise<void> {
  invitationsStore.setState({ view: await bridge().clusterJoin({ node: LOCAL_NODE, token }) });
}

/** The first reason the host would refuse `request`, checked with its own schema before anything is sent. */
export function inviteProblem(request: ClusterInviteRequest): string | null {
  return problemOf(requestSchemas.clusterInvite.safeParse({ node: LOCAL_NODE, ...request }));
}
