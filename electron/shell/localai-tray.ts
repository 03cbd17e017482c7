// The tray icon's words and menu: LocalAI's state in its tooltip (and beside the icon on macOS, only while it needs an
// eye: starting, stopping, crashed, upgrading), and the app menu's Start, Stop and Open LocalAI's Web UI, each enabled
// only where it can act. A tray menu is not read at its click as the app menu is: it is made again when what it shows
// changed, which `followTray` tells by reading LocalAI's view on a timer. Electron-free; main.ts builds the Tray.
import type { LocalAiRunView } from '../../shared/types.ts';
import { localAiControls, type LocalAiControlsEnabled, type LocalAiMenuActions, type MenuEntry } from './localai-menu.ts';

export interface TrayState {
  tooltip: string;
  /** The text beside the icon (macOS): empty while LocalAI is settled. */
  title: string;
  /** The first line of its menu, not clickable. */
  status: string;
  enabled: LocalAiControlsEnabled;
}

export interface TrayActions extends Pick<LocalAiMenuActions, 'view' | 'start' | 'stop' | 'open'> {
  showWindow(): void;
  quit(): void;
}

const STATE_WORDS: Record<LocalAiRunView['state'], string> = {
  'not-installed': 'not installed (Settings → LocalAI)',
  stopped: 'stopped',
  starting: 'starting…',
  ready: 'ready',
  stopping: 'stopping…',
  crashed: 'crashed, restarting',
  'crash-looping': 'crash-looping, left stopped',
};

const STARTABLE = new Set<LocalAiRunView['state']>(['stopped', 'crashed', 'crash-looping']);
const STOPPABLE = new Set<LocalAiRunView['state']>(['starting', 'ready', 'crashed']);
const SETTLED = new Set<LocalAiRunView['state']>(['not-installed', 'stopped', 'ready']);

export function trayState(view: LocalAiRunView): TrayState {
  const operation = view.operation?.state === 'running' ? view.operation : null;
  const doing = operation ? `${operation.kind}: ${operation.phase}` : null;
  const status = `LocalAI${view.version ? ` ${view.version}` : ''}: ${doing ?? STATE_WORDS[view.state]}`;
  const marked = view.marked.length > 0 ? `${view.marked.length} backend${view.marked.length === 1 ? '' : 's'} to upgrade (Settings → LocalAI)` : null;
  const where = view.state === 'ready' && view.url ? `at ${view.url}` : null;
  return {
    tooltip: ['Hangar', status, where, marked].filter(Boolean).join('\n'),
    title: operation ? `LocalAI ${operation.kind}…` : SETTLED.has(view.state) ? '' : `LocalAI ${STATE_WORDS[view.state]}`,
    status,
    enabled: {
      start: !operation && STARTABLE.has(view.state),
      stop: !operation && STOPPABLE.has(view.state),
      open: view.state === 'ready' && view.url !== null,
    },
  };
}

export function trayMenu(state: TrayState, actions: TrayActions): MenuEntry[] {
  return [
    { label: state.status, enabled: false },
    ...localAiControls(actions, state.enabled),
    { type: 'separator' },
    { label: 'Open Hangar', click: () => actions.showWindow() },
    { label: 'Quit Hangar', click: () => actions.quit() },
  ];
}

/**
 * Reads LocalAI's view every `everyMs` and hands `show` the tray's state when it differs from the last one shown
 * (at once, the first time); the returned function stops it.
 */
export function followTray(view: () => LocalAiRunView, show: (state: TrayState) => void, everyMs: number): () => void {
  let shown = '';
  const look = () => {
    const state = trayState(view());
    const key = JSON.stringify(state);
    if (key === shown) return;
    shown = key;
    show(state);
  };
  look();
  const timer = setInterval(look, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
