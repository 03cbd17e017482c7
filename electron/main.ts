// The Electron main process: one locked-down window on the local node, single instance, remembered state.
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import {
  BrowserWindow,
  Menu,
  Tray,
  app,
  dialog,
  ipcMain,
  nativeImage,
  net,
  protocol,
  screen,
  session,
  shell,
  type MenuItemConstructorOptions,
} from 'electron';
import { LOCAL_NODE, type ClusterJoinRequest } from '../shared/api.ts';
import type { NodeSettings } from '../shared/types.ts';
import packageJson from '../package.json' with { type: 'json' };
import type { LocalNode } from './core/node.ts';
import type { LocalAiRunner } from './localai/runner/runner.ts';
import { joinedConnection, startHost, startNode, storedClusterSettings, type Host, type JoinOptions } from './fleet/start.ts';
import { forwardEvents, registerIpc } from './ipc.ts';
import { APP_HOST, APP_SCHEME, APP_URL, CONTENT_SECURITY_POLICY, appResponseHeaders, resolveAppFile } from './shell/app-protocol.ts';
import { claimDesktopHome } from './shell/desktop-home.ts';
import { localAiMenu } from './shell/localai-menu.ts';
import { followTray, trayMenu, type TrayActions } from './shell/localai-tray.ts';
import { TRAY_ICON_PNG } from './shell/tray-icon.ts';
import { debouncedWriter, readJson, writeJson } from './shell/json-file.ts';
import { DEFAULT_DESKTOP_SETTINGS, desktopSettingsSchema, type DesktopSettings } from './shell/settings.ts';
import { externalUrl, isRemoteRequest, senderCheck } from './shell/trust.ts';
import { DEFAULT_SIZE, DEFAULT_WINDOW_STATE, MIN_SIZE, visibleBounds, windowStateSchema, type WindowState } from './shell/window-state.ts';
import { messageOf } from '../shared/error-text.ts';

const isDev = !app.isPackaged;
/** main.cjs sits in dist/electron (inside app.asar when packaged); the renderer and preload are its neighbours. */
const rendererDir = join(__dirname, '..', 'renderer');
const preloadFile = join(__dirname, 'preload.cjs');
const starterGallery = app.isPackaged
  ? join(process.resourcesPath, 'backends', 'index.yaml')
  : join(app.getAppPath(), 'dist', 'backends', 'index.yaml');
const projectPage = (packageJson as { homepage?: string }).homepage;

// HANGAR_HOME moves the whole profile (node home, settings, Chromium data), as it moves the agent's home.
if (process.env.HANGAR_HOME) app.setPath('userData', process.env.HANGAR_HOME);

// Before `ready`: every renderer sandboxed, and our scheme a secure standard origin so 'self' means the app.
app.enableSandbox();
protocol.registerSchemesAsPrivileged([{ scheme: APP_SCHEME, privileges: { standard: true, secure: true, supportFetchAPI: true } }]);

let window: BrowserWindow | null = null;
/** Held for the app's life: a Tray that is garbage-collected takes its icon with it. */
let tray: Tray | null = null;
const TRAY_REFRESH_MS = 1000;

if (app.requestSingleInstanceLock()) {
  app.on('second-instance', () => {
    if (!window) return;
    if (window.isMinimized()) window.restore();
    window.focus();
  });
  app.whenReady().then(start).catch((error: unknown) => {
    dialog.showErrorBox('Hangar could not start', messageOf(error));
    app.exit(1);
  });
} else {
  app.quit();
}

async function start(): Promise<void> {
  const userData = app.getPath('userData');
  // One host per home: with an agent already serving it, offer that agent's UI rather than a second host.
  const home = await claimDesktopHome(userData);
  if (home.kind === 'busy') return offerRunningHost(home.message, home.openUrl);
  const desktopFile = join(userData, 'settings.json');
  const desktop = readJson(desktopFile, desktopSettingsSchema, DEFAULT_DESKTOP_SETTINGS);
  // Settings name a cluster, else the home joined one by invitation (Settings → Cluster → Join with an invitation).
  const joining = clusterOf(desktop) ?? (await joinedConnection(userData))?.cluster;
  // Settings → Cluster changes what the app joins at its next start, kept in the desktop's settings file.
  const clusterPlace = {
    read: async () => desktop.cluster ?? null,
    write: async (next: ClusterJoinRequest | null) => writeJson(desktopFile, { ...desktop, cluster: next ?? undefined }),
  };
  const clusterSettings = (joined: JoinOptions | undefined) => storedClusterSettings(joined, clusterPlace);

  lockDownSession();
  protocol.handle(APP_SCHEME, serveRenderer);

  // The node, with LocalAI beside it: run by Hangar (Settings → LocalAI), or one running already, linked in Settings.
  const { node, localaiServer, localaiRunner, recovered } = await startNode({
    home: userData,
    ...(joining && { name: joining.name }),
    starterGallery,
    // Starter backends are Node scripts: they run on this very binary in Node mode (hence the RunAsNode fuse).
    runtimeEnv: { HANGAR_NODE: process.execPath, ELECTRON_RUN_AS_NODE: '1' },
    // Chromium's network stack: system proxy settings and certificate store.
    fetch: ((input, init) => net.fetch(input instanceof URL ? input.href : input, init)) as typeof fetch,
  });
  for (const line of recovered) console.log(`hangar: recovered: ${line}`);

  const host = await startHost({ node, home: userData, stateDir: node.stateDir, cluster: joining, clusterSettings: await clusterSettings(joining), localaiServer, localaiRunner }).catch(async (error: unknown) => {
    // A cluster that cannot be joined leaves this machine usable on its own.
    console.error(`hangar: ${messageOf(error)}`);
    return startHost({ node, home: userData, stateDir: node.stateDir, clusterSettings: await clusterSettings(undefined), localaiServer, localaiRunner });
  });
  // The app's window shows the cluster for as long as the app runs.
  host.watch();
  registerIpc(ipcMain, host, senderCheck(APP_URL, () => (window && !window.isDestroyed() ? window.webContents.mainFrame : null)));
  quitStopsBackends(node, host, localaiRunner);
  app.setAboutPanelOptions({ applicationName: 'Hangar', applicationVersion: app.getVersion(), ...(projectPage ? { website: projectPage } : {}) });
  const { settings } = await node.settings({ node: LOCAL_NODE });
  const update = (patch: Partial<NodeSettings>) => void node.updateSettings({ node: LOCAL_NODE, settings: patch });
  const localaiFailed = (error: unknown) => console.error(`hangar: LocalAI: ${messageOf(error)}`);
  const controls = {
    view: () => localaiRunner.view(),
    start: () => void localaiRunner.control('start').catch(localaiFailed),
    stop: () => void localaiRunner.control('stop').catch(localaiFailed),
    open: openExternal,
  };
  const localai = localAiMenu({
    ...controls,
    autostart: settings.localaiAutostart,
    setAutostart: (on) => update({ localaiAutostart: on }),
    openAtLogin: app.getLoginItemSettings().openAtLogin,
    setOpenAtLogin: (on) => app.setLoginItemSettings({ openAtLogin: on }),
  });
  Menu.setApplicationMenu(Menu.buildFromTemplate(menuTemplate(settings, update, localai)));
  void localaiRunner.launch(settings.localaiAutostart).catch(localaiFailed);

  const openWindow = () => {
    window = createWindow(join(userData, 'window-state.json'));
    forwardEvents(host, window.webContents);
    window.on('closed', () => (window = null));
  };
  openWindow();
  // What the first load of a model needs is made ready once the window's page is in, as the agent does once idle.
  window!.webContents.once('did-finish-load', () => void node.warmUp().catch(() => undefined));
  showTray({
    ...controls,
    showWindow: () => (window ? window.show() : openWindow()),
    quit: () => app.quit(),
  });
  app.on('activate', () => window ?? openWindow());
  app.on('window-all-closed', () => {
    if (process.platform !== 'darwin') app.quit();
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => app.quit());
}

async function offerRunningHost(message: string, openUrl: string | null): Promise<void> {
  const buttons = openUrl ? ['Open It in the Browser', 'Quit'] : ['Quit'];
  const { response } = await dialog.showMessageBox({
    type: 'info',
    message: 'Hangar is already running on this home',
    detail: `${message}.${openUrl ? ' Open its window in your browser instead?' : ''}`,
    buttons,
    defaultId: 0,
    cancelId: buttons.length - 1,
  });
  if (openUrl && response === 0) openExternal(openUrl);
  app.exit(0);
}

/** Electron's security checklist, applied to every session user and every web contents. */
function lockDownSession(): void {
  const ses = session.defaultSession;
  // The one permission granted: the app's page writes text to the clipboard (Copy, in Settings → Cluster).
  const copies = (permission: string, url: string) => permission === 'clipboard-sanitized-write' && url.startsWith(`${APP_SCHEME}://${APP_HOST}/`);
  ses.setPermissionRequestHandler((contents, permission, callback) => callback(copies(permission, contents.getURL())));
  ses.setPermissionCheckHandler((_contents, permission, origin) => copies(permission, `${origin}/`));
  // Pages load packaged content only. Requests without a page (the node's net.fetch of galleries) pass.
  ses.webRequest.onBeforeRequest((details, callback) => callback({ cancel: details.webContentsId !== undefined && isRemoteRequest(details.url) }));
  ses.webRequest.onHeadersReceived((details, callback) => {
    if (details.url.startsWith('devtools:')) return callback({});
    callback({ responseHeaders: { ...details.responseHeaders, 'Content-Security-Policy': [CONTENT_SECURITY_POLICY] } });
  });
  app.on('web-contents-created', (_event, contents) => {
    contents.on('will-navigate', (event) => {
      event.preventDefault();
      openExternal(event.url);
    });
    contents.on('will-attach-webview', (event) => event.preventDefault());
    contents.setWindowOpenHandler(({ url }) => {
      openExternal(url);
      return { action: 'deny' };
    });
  });
}

/** The tray icon: LocalAI's state in its tooltip, its menu made again as that state changes (shell/localai-tray.ts). */
function showTray(actions: TrayActions): void {
  const icon = nativeImage.createFromBuffer(Buffer.from(TRAY_ICON_PNG, 'base64'), { scaleFactor: 2 });
  icon.setTemplateImage(true);
  tray = new Tray(icon);
  followTray(actions.view, (state) => {
    tray?.setToolTip(state.tooltip);
    tray?.setTitle(state.title);
    tray?.setContextMenu(Menu.buildFromTemplate(trayMenu(state, actions)));
  }, TRAY_REFRESH_MS);
}

function openExternal(url: string): void {
  const safe = externalUrl(url);
  if (safe) void shell.openExternal(safe);
}

async function serveRenderer(request: Request): Promise<Response> {
  const file = resolveAppFile(rendererDir, request.url);
  if (file) {
    try {
      return new Response(await readFile(file), { headers: appResponseHeaders(file) });
    } catch {
      // fall through to 404
    }
  }
  return new Response('not found', { status: 404, headers: { 'Content-Security-Policy': CONTENT_SECURITY_POLICY } });
}

function createWindow(stateFile: string): BrowserWindow {
  const state = readJson(stateFile, windowStateSchema, DEFAULT_WINDOW_STATE);
  const bounds = visibleBounds(state.bounds, screen.getAllDisplays().map((display) => display.workArea));
  const win = new BrowserWindow({
    ...DEFAULT_SIZE,
    ...bounds,
    minWidth: MIN_SIZE.width,
    minHeight: MIN_SIZE.height,
    show: false,
    title: 'Hangar',
    webPreferences: {
      preload: preloadFile,
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      navigateOnDragDrop: false,
      spellcheck: false,
      devTools: isDev,
    },
  });
  win.once('ready-to-show', () => {
    if (state.maximized) win.maximize();
    win.show();
  });

  const writer = debouncedWriter<WindowState>(stateFile, 500);
  const remember = () => {
    if (!win.isDestroyed()) writer.schedule({ bounds: win.getNormalBounds(), maximized: win.isMaximized() });
  };
  win.on('resize', remember);
  win.on('move', remember);
  win.on('maximize', remember);
  win.on('unmaximize', remember);
  win.on('close', () => {
    remember();
    writer.flush();
  });

  void win.loadURL(APP_URL);
  return win;
}

/** Quitting closes the host, then the node: it stops the backends it started unless its settings keep them running. */
function quitStopsBackends(node: LocalNode, host: Host, localai: LocalAiRunner): void {
  let phase: 'running' | 'closing' | 'closed' = 'running';
  app.on('before-quit', (event) => {
    if (phase === 'closed') return;
    event.preventDefault();
    if (phase === 'closing') return;
    phase = 'closing';
    host
      .close()
      .then(() => localai.close())
      .then(() => node.close())
      .catch((error: unknown) => console.error(`hangar: closing the node failed: ${messageOf(error)}`))
      .finally(() => {
        phase = 'closed';
        app.quit();
      });
  });
}

/** The cluster this machine joins, from the app's own settings (the agent's --cluster options). */
function clusterOf(desktop: DesktopSettings): JoinOptions | undefined {
  return desktop.cluster && { ...desktop.cluster, name: desktop.cluster.name ?? hostname() };
}

function menuTemplate(settings: NodeSettings, update: (patch: Partial<NodeSettings>) => void, localai: MenuItemConstructorOptions): MenuItemConstructorOptions[] {
  const mac = process.platform === 'darwin';
  return [
    ...(mac ? [{ role: 'appMenu' } as const] : []),
    {
      label: 'File',
      submenu: [
        {
          label: 'Keep Backends Running After Quit',
          type: 'checkbox',
          checked: settings.keepBackendsRunning,
          click: (item) => update({ keepBackendsRunning: item.checked }),
        },
        {
          label: 'Start Backends on Launch',
          type: 'checkbox',
          checked: settings.startBackendsOnLaunch,
          click: (item) => update({ startBackendsOnLaunch: item.checked }),
        },
        { type: 'separator' },
        { role: 'quit' },
      ],
    },
    { role: 'editMenu' },
    localai,
    {
      label: 'View',
      submenu: [
        ...(isDev ? [{ role: 'reload' } as const, { role: 'toggleDevTools' } as const, { type: 'separator' } as const] : []),
        { role: 'resetZoom' },
        { role: 'zoomIn' },
        { role: 'zoomOut' },
        { type: 'separator' },
        { role: 'togglefullscreen' },
      ],
    },
    {
      role: 'help',
      submenu: [
        { role: 'about' },
        ...(projectPage ? [{ label: 'Project Page', click: () => openExternal(projectPage) }] : []),
      ],
    },
  ];
}
