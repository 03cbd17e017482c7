// Which IPC senders and which URLs the shell trusts. Plain data in, booleans out: no Electron here.

/** The parts of Electron's WebFrameMain the sender check reads. */
export interface FrameLike {
  readonly url: string;
  readonly parent: unknown;
  readonly frameTreeNodeId: number;
}

/** True when `url` is the app page `appUrl` (the fragment and query may differ: they are in-page state). */
export function isAppPage(url: string, appUrl: string): boolean {
  const page = parseUrl(url);
  const app = parseUrl(appUrl);
  return page !== null && app !== null && page.protocol === app.protocol && page.host === app.host && page.pathname === app.pathname;
}

/**
 * Builds the IPC sender check: only the main frame of the app window, showing the app page, may call the node.
 * `mainFrame` is read per call because the window (and so its frame) can be recreated.
 */
export function senderCheck(appUrl: string, mainFrame: () => FrameLike | null | undefined): (frame: FrameLike | null | undefined) => boolean {
  return (frame) => {
    const main = mainFrame();
    return (
      frame != null &&
      main != null &&
      frame.parent === null &&
      frame.frameTreeNodeId === main.frameTreeNodeId &&
      isAppPage(frame.url, appUrl)
    );
  };
}

/** The URL to hand to the OS browser, or null: only http(s) links ever leave the app. */
export function externalUrl(url: string): string | null {
  const parsed = parseUrl(url);
  return parsed && (parsed.protocol === 'http:' || parsed.protocol === 'https:') ? parsed.href : null;
}

const REMOTE_PROTOCOLS = new Set(['http:', 'https:', 'ws:', 'wss:', 'ftp:', 'file:']);

/** Requests the app's session refuses: the window shows packaged content only, never the network or the disk. */
export function isRemoteRequest(url: string): boolean {
  const parsed = parseUrl(url);
  return parsed === null || REMOTE_PROTOCOLS.has(parsed.protocol);
}

function parseUrl(url: string): URL | null {
  try {
    return new URL(url);
  } catch {
    return null;
  }
}
