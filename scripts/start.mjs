// `npm start` (after the build): the desktop app on the starter gallery. Where no Electron binary is installed,
// the same UI is served headless by the agent, which prints its URL and the URL with the token to open.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';
import { tsImport } from 'tsx/esm/api';

const root = fileURLToPath(new URL('..', import.meta.url));

const { findElectronBinary } = await tsImport('../electron/shell/electron-binary.ts', import.meta.url);
const electron = findElectronBinary();

const [command, args, env] =
  'path' in electron
    ? [electron.path, ['.'], withoutRunAsNode(process.env)]
    : [process.execPath, ['dist/agent/cli.js', 'agent'], process.env];
if (!('path' in electron)) console.log(`hangar: no Electron binary here, so serving the UI headless instead (${electron.missing})`);

// Its own process group, so a terminal's Ctrl-C reaches the child once: forwarded by us.
const child = spawn(command, args, { cwd: root, stdio: 'inherit', env, detached: true });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('error', (error) => {
  console.error(`hangar: could not start ${command}: ${error.message}`);
  process.exit(1);
});
child.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));

/** An inherited ELECTRON_RUN_AS_NODE would start Electron as plain Node instead of the app. */
function withoutRunAsNode(environment) {
  const { ELECTRON_RUN_AS_NODE: _ignored, ...rest } = environment;
  return rest;
}
