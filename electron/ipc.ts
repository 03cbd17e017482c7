// Electron's side of the IPC: one ipcMain handler per contract method, and node events pushed to the window.
import type { IpcMain, WebContents, WebFrameMain } from 'electron';
import { hangarMethods, type HangarApi, type NodeEvent } from '../shared/index.ts';
import { EVENT_CHANNEL, methodChannel } from './shell/ipc-contract.ts';
import { createRouter } from './shell/router.ts';

/** Registers a handler per method of the contract; returns a function that removes them. */
export function registerIpc(ipcMain: IpcMain, node: HangarApi, isTrustedSender: (frame: WebFrameMain | null) => boolean): () => void {
  const route = createRouter(node, isTrustedSender);
  for (const method of hangarMethods) {
    ipcMain.handle(methodChannel(method), (event, payload: unknown) => route(method, event.senderFrame, payload));
  }
  return () => {
    for (const method of hangarMethods) ipcMain.removeHandler(methodChannel(method));
  };
}

/** Forwards every node event to the window while it lives; returns the unsubscribe function. */
export function forwardEvents(
  node: { on(type: 'event', listener: (event: NodeEvent) => void): unknown; off(type: 'event', listener: (event: NodeEvent) => void): unknown },
  contents: WebContents,
): () => void {
  const send = (event: NodeEvent) => {
    if (!contents.isDestroyed()) contents.send(EVENT_CHANNEL, event);
  };
  node.on('event', send);
  const stop = () => node.off('event', send);
  contents.once('destroyed', stop);
  return stop;
}
