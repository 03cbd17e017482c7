// `hangar agent --localai-frontend URL --localai-api-key-file F --localai-nats URL …`: the LocalAI cluster whose
// workers the agent manages; `--localai-url URL`: the LocalAI server beside its node. The API key is read from its
// file, never taken on the command line (the process list shows that to every user of the machine); NATS credentials
// come as for Hangar's own cluster.
import { readFile, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import type { LocalAiJoinRequest } from '../../shared/api.ts';
import type { LocalAiHostOptions } from '../fleet/start.ts';
import { apiKeyProblem } from '../localai/http.ts';
import type { LocalAiServerOptions } from '../localai/server/server.ts';
import { checkTarget } from '../localai/server/target.ts';
import { unreadableFile } from '../core/unreadable-file.ts';
import { HangarError } from '../../shared/errors.ts';

export interface LocalAiCommandOptions {
  localaiUrl?: string;
  localaiFrontend?: string;
  localaiApiKeyFile?: string;
  localaiNats?: string;
  localaiNatsUser?: string;
  localaiNatsPassword?: string;
  localaiNatsToken?: string;
  localaiNatsCreds?: string;
  localaiNatsCa?: string;
  localaiPoll?: number;
  localaiReloadWait?: number;
  localaiBin?: string;
  localaiReleases?: string;
  localaiModels?: string;
}

export function localaiOptions(command: Command, parseMs: (value: string) => number): Command {
  return command
    .option('--localai-url <url>', "link the LocalAI server at http://HOST:PORT that shares this node's backends directory: its models are shown, and brought back on the new tree after every swap")
    .option('--localai-frontend <url>', 'manage the workers of the LocalAI distributed cluster whose frontend is at http://HOST:PORT')
    .option('--localai-api-key-file <file>', "read a LocalAI API key (an admin's, for a frontend) from this file")
    .option('--localai-nats <url>', "LocalAI's NATS server, nats://HOST:PORT or tls://HOST:PORT")
    .option('--localai-nats-user <user>', "NATS user for LocalAI's server")
    .option('--localai-nats-password <password>', 'its password (default: $HANGAR_LOCALAI_NATS_PASSWORD)')
    .option('--localai-nats-token <token>', 'a NATS token instead (default: $HANGAR_LOCALAI_NATS_TOKEN)')
    .option('--localai-nats-creds <file>', 'a NATS .creds file (user JWT and nkey seed) instead')
    .option('--localai-nats-ca <file>', 'CA file for a tls:// LocalAI NATS server')
    .option('--localai-poll <ms>', "how often the frontend's node list and each worker's backends, or the server's loaded models, are read", parseMs)
    .option('--localai-reload-wait <ms>', 'how long an upgrade waits for the models it stopped to run again', parseMs)
    .option('--localai-bin <path>', 'run this LocalAI binary (hangar localai start) instead of one Hangar installs')
    .option('--localai-releases <url>', "where hangar localai install fetches LocalAI's releases (a mirror of https://github.com's layout; default https://github.com)")
    .option('--localai-models <dir>', "the models directory of the LocalAI Hangar runs (default <home>/models)");
}

/** LocalAI run by the agent (`hangar localai`): its binary, release source and models directory. */
export async function localaiRunOptions(options: LocalAiCommandOptions): Promise<{ binary?: string; releases?: string; modelsPath?: string }> {
  if (options.localaiReleases !== undefined) httpUrl('--localai-releases', options.localaiReleases);
  const modelsPath = options.localaiModels !== undefined ? resolve(options.localaiModels) : undefined;
  // LocalAI's start makes the models directory; a parent that is not there is a path typed wrong, not one to make.
  if (modelsPath !== undefined && !(await stat(dirname(modelsPath)).then((s) => s.isDirectory(), () => false))) {
    throw new HangarError('not-found', `--localai-models ${modelsPath}: there is no directory ${dirname(modelsPath)} to make it in`);
  }
  return {
    ...(options.localaiBin !== undefined && { binary: resolve(options.localaiBin) }),
    ...(options.localaiReleases !== undefined && { releases: options.localaiReleases }),
    ...(modelsPath !== undefined && { modelsPath }),
  };
}

/** An option's URL as typed: http(s) and nothing else, or the option is typed wrong (exit 2). */
function httpUrl(option: string, value: string): void {
  if (!/^https?:\/\/\S+$/i.test(value) || !URL.canParse(value)) throw new HangarError('invalid-request', `${option} wants an http(s) URL, got "${value.slice(0, 200)}"`);
}

/** The options as the host takes them; none given: the LocalAI cluster is the one Settings keep. */
export async function localaiHostOptions(options: LocalAiCommandOptions, insecure: boolean): Promise<LocalAiHostOptions> {
  const timing = { pollMs: options.localaiPoll, reloadWaitMs: options.localaiReloadWait };
  if (options.localaiFrontend === undefined) {
    if (options.localaiNats !== undefined) throw new HangarError('invalid-request', '--localai-nats goes with --localai-frontend');
    if (options.localaiApiKeyFile !== undefined && options.localaiUrl === undefined) throw new HangarError('invalid-request', '--localai-api-key-file goes with --localai-frontend or --localai-url');
    return { fixed: null, ...timing };
  }
  if (options.localaiNats === undefined) throw new HangarError('invalid-request', "--localai-frontend needs --localai-nats: Hangar calls LocalAI's workers over their NATS subjects");
  httpUrl('--localai-frontend', options.localaiFrontend);
  const fixed: LocalAiJoinRequest = {
    frontend: options.localaiFrontend,
    nats: options.localaiNats,
    ...(options.localaiApiKeyFile !== undefined && { apiKey: await readKey(options.localaiApiKeyFile) }),
    ...defined('natsUser', options.localaiNatsUser),
    ...defined('natsPassword', options.localaiNatsPassword ?? process.env.HANGAR_LOCALAI_NATS_PASSWORD),
    ...defined('natsToken', options.localaiNatsToken ?? process.env.HANGAR_LOCALAI_NATS_TOKEN),
    ...defined('natsCredsFile', options.localaiNatsCreds),
    ...defined('natsCaFile', options.localaiNatsCa),
    ...(insecure && { insecure: true }),
  };
  return { fixed, ...timing };
}

/** The LocalAI server beside the node: the one --localai-url names (fixed for this run), else the one Settings keep. */
export async function localaiServerOptions(options: LocalAiCommandOptions, insecure: boolean): Promise<Pick<LocalAiServerOptions, 'fixed' | 'pollMs' | 'loadTimeoutMs' | 'insecure'>> {
  const timing = {
    ...(options.localaiPoll !== undefined && { pollMs: options.localaiPoll }),
    ...(options.localaiReloadWait !== undefined && { loadTimeoutMs: options.localaiReloadWait }),
    insecure,
  };
  if (options.localaiUrl === undefined) return { fixed: null, ...timing };
  httpUrl('--localai-url', options.localaiUrl);
  const apiKey = options.localaiApiKeyFile !== undefined ? await readKey(options.localaiApiKeyFile) : undefined;
  const fixed = { url: options.localaiUrl, ...(apiKey && { apiKey }) };
  checkTarget({ url: fixed.url, apiKey: apiKey ?? null, pid: null }, insecure);
  return { fixed, ...timing };
}

function defined<K extends string>(key: K, value: string | undefined): Partial<Record<K, string>> {
  return value ? ({ [key]: value } as Record<K, string>) : {};
}

/**
 * The key in its file: refused when others may read the file, and when it holds more than the key on one line (a
 * second line would be sent as part of the header). No message holds any of the file's text.
 */
async function readKey(file: string): Promise<string> {
  const cannot = (error: NodeJS.ErrnoException) => {
    throw unreadableFile(`the LocalAI API key file ${file}`, error);
  };
  const { mode } = await stat(file).catch(cannot);
  if ((mode & 0o077) !== 0) throw new HangarError('bad-input', `the LocalAI API key file ${file} can be read by others (mode ${(mode & 0o777).toString(8)}): run chmod 600 ${file}`);
  const key = (await readFile(file, 'utf8').catch(cannot)).trim();
  if (!key) throw new HangarError('bad-input', `the LocalAI API key file ${file} is empty`);
  if (/[\r\n]/.test(key)) throw new HangarError('bad-input', `the LocalAI API key file ${file} holds more than one line: put the key alone in it`);
  const problem = apiKeyProblem(key);
  if (problem) throw new HangarError('bad-input', `the LocalAI API key file ${file}: ${problem}`);
  return key;
}
