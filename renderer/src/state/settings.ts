// The selected node's settings: read when the Settings view opens, kept current by 'settings' events.
import { createStore, useStore } from 'zustand';
import { nodeSettings } from '../../../shared/schemas.ts';
import type { GallerySetting, NodeSettings, SettingsView } from '../../../shared/types.ts';
import { clusterSetting, problemOf } from './host-settings.ts';
import { selectedNode } from './node.ts';
import { bridge } from './session.ts';

export interface SettingsState {
  view: SettingsView | null;
}

export const settingsStore = createStore<SettingsState>(() => ({ view: null }));

export function useSettings<T>(selector: (state: SettingsState) => T): T {
  return useStore(settingsStore, selector);
}

export async function loadSettings(): Promise<void> {
  const [view] = await Promise.all([bridge().settings({ node: selectedNode() }), clusterSetting.load()]);
  settingsStore.setState({ view });
}

/** Shows the change at once, then what the node kept; a refused change puts the old values back. */
export async function changeSettings(patch: Partial<NodeSettings>): Promise<void> {
  const before = settingsStore.getState().view;
  if (before) settingsStore.setState({ view: { ...before, settings: { ...before.settings, ...patch } } });
  try {
    settingsStore.setState({ view: await bridge().updateSettings({ node: selectedNode(), settings: patch }) });
  } catch (error) {
    settingsStore.setState({ view: before });
    throw error;
  }
}

/**
 * Adds a gallery once the node has read it (`force`: without reading it): the node's view is shown only once it kept
 * the change, and a refusal leaves the view as it was.
 */
export async function addGallery(galleries: GallerySetting[], force: boolean): Promise<SettingsView> {
  const view = await bridge().updateSettings({ node: selectedNode(), settings: { galleries }, ...(force && { force }) });
  settingsStore.setState({ view });
  return view;
}

/** The first reason `patch` would be refused, checked with the node's own schema before anything is sent. */
export function settingsProblem(patch: Partial<NodeSettings>): string | null {
  return problemOf(nodeSettings.partial().safeParse(patch));
}
