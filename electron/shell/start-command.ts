// What `npm start -- OPTIONS` runs: the desktop app, or the headless agent where there is no Electron binary or
// the options ask for a served node (--listen, --ports). Every option reaches what runs.
import type { ElectronBinary } from './electron-binary.ts';
import { HangarError } from '../../shared/errors.ts';

export interface StartCommand {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** One line saying why the headless agent runs, when it does. */
  note: string | null;
}

/** Options only the headless agent has: the desktop app listens on no address and keeps its own port range. */
const SERVED_ONLY = ['--listen', '--ports'];

export function startCommand(argv: string[], electron: ElectronBinary, env: NodeJS.ProcessEnv, nodePath: string): StartCommand {
  const served = argv.filter((arg) => SERVED_ONLY.some((flag) => arg === flag || arg.startsWith(`${flag}=`)));
  if ('path' in electron && served.length === 0) {
    const home = optionValue(argv, '--home');
    const { ELECTRON_RUN_AS_NODE: _ignored, ...rest } = env; // it would start Electron as plain Node instead of the app
    const unknown = argv.filter((arg, i) => !(arg === '--home' || arg.startsWith('--home=') || argv[i - 1] === '--home'));
    if (unknown.length > 0) throw new HangarError('invalid-request', `the desktop app takes only --home; ${unknown.join(' ')} is for the headless agent`);
    return { command: electron.path, args: ['.'], env: home === undefined ? rest : { ...rest, HANGAR_HOME: home }, note: null };
  }
  const why = 'path' in electron ? `${served.map((a) => a.split('=')[0]).join(' and ')} asked for a served node` : `no Electron binary here: ${electron.missing}`;
  return { command: nodePath, args: ['dist/agent/cli.js', 'agent', ...argv], env, note: `hangar: serving the UI headless (${why})` };
}

function optionValue(argv: string[], flag: string): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === flag) return argv[i + 1];
    if (argv[i]!.startsWith(`${flag}=`)) return argv[i]!.slice(flag.length + 1);
  }
  return undefined;
}
