// `npm start [-- --home DIR --listen HOST:PORT --ports A-B …]` (after the build): the desktop app on the starter
// gallery, or the same UI served headless by the agent, which prints its URL and the URL with the token to open.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';
import { tsImport } from 'tsx/esm/api';

const root = fileURLToPath(new URL('..', import.meta.url));

const { findElectronBinary } = await tsImport('../electron/shell/electron-binary.ts', import.meta.url);
const { startCommand } = await tsImport('../electron/shell/start-command.ts', import.meta.url);

let start;
try {
  start = startCommand(process.argv.slice(2), findElectronBinary(), process.env, process.execPath);
} catch (error) {
  console.error(`hangar: ${error.message}`);
  process.exit(2);
}
if (start.note) console.log(start.note);

// Its own process group, so a terminal's Ctrl-C reaches the child once: forwarded by us. So is the hangup of a
// terminal that closes: the app or agent goes with it, rather than live on with no terminal.
const child = spawn(start.command, start.args, { cwd: root, stdio: 'inherit', env: start.env, detached: true });
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
child.on('error', (error) => {
  console.error(`hangar: could not start ${start.command}: ${error.message}`);
  process.exit(1);
});
child.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
