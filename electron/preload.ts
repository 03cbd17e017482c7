// Runs sandboxed in the window before the page: exposes window.hangar (the contract's functions plus onEvent)
// and nothing else. The page never sees ipcRenderer, channels or IPC events.
import { contextBridge, ipcRenderer } from 'electron';
import { createBridge } from './shell/bridge.ts';

contextBridge.exposeInMainWorld(
  'hangar',
  createBridge(
    (channel, payload) => ipcRenderer.invoke(channel, payload),
    (channel, listener) => {
      const forward = (_event: Electron.IpcRendererEvent, payload: unknown) => listener(payload);
      ipcRenderer.on(channel, forward);
      return () => {
        ipcRenderer.removeListener(channel, forward);
      };
    },
  ),
);
