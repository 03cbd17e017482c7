// The app menu's LocalAI entries: start and stop the LocalAI the app runs, open its web UI in the browser, start it
// with the app; and the app itself at login (app.setLoginItemSettings, macOS and Windows). Each item reads LocalAI's
// state when it is clicked, so the menu needs no rebuilding as that state changes. Start, Stop and Open are the tray's
// menu too (localai-tray.ts), there enabled by LocalAI's state.
import type { LocalAiRunView } from '../../shared/types.ts';

/** The part of Electron's MenuItemConstructorOptions used here (the shell stays Electron-free; main.ts builds it). */
export interface MenuEntry {
  label?: string;
  type?: 'separator' | 'checkbox';
  enabled?: boolean;
  checked?: boolean;
  click?: (item: { checked: boolean }) => void;
  submenu?: MenuEntry[];
}

export interface LocalAiMenuActions {
  view(): LocalAiRunView;
  start(): void;
  stop(): void;
  open(url: string): void;
  autostart: boolean;
  setAutostart(on: boolean): void;
  openAtLogin: boolean;
  setOpenAtLogin(on: boolean): void;
}

/** Which of the controls can act now (the tray's menu is made again as LocalAI's state changes; the app menu's is not). */
export interface LocalAiControlsEnabled {
  start: boolean;
  stop: boolean;
  open: boolean;
}

const ALL_ENABLED: LocalAiControlsEnabled = { start: true, stop: true, open: true };

/** Start, Stop and Open LocalAI's Web UI: in the app menu and in the tray's. */
export function localAiControls(actions: Pick<LocalAiMenuActions, 'view' | 'start' | 'stop' | 'open'>, enabled = ALL_ENABLED): MenuEntry[] {
  return [
    { label: 'Start LocalAI', enabled: enabled.start, click: () => actions.start() },
    { label: 'Stop LocalAI', enabled: enabled.stop, click: () => actions.stop() },
    {
      label: "Open LocalAI's Web UI",
      enabled: enabled.open,
      click: () => {
        const url = actions.view().url;
        if (url) actions.open(url);
      },
    },
  ];
}

export function localAiMenu(actions: LocalAiMenuActions): MenuEntry {
  return {
    label: 'LocalAI',
    submenu: [
      ...localAiControls(actions),
      { type: 'separator' },
      { label: 'Start LocalAI with Hangar', type: 'checkbox', checked: actions.autostart, click: (item) => actions.setAutostart(item.checked) },
      { label: 'Open Hangar at Login', type: 'checkbox', checked: actions.openAtLogin, click: (item) => actions.setOpenAtLogin(item.checked) },
    ],
  };
}
