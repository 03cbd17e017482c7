// The stand-in run as LocalAI's `local-ai` binary (tests only): `local-ai run` with LocalAI's own flags and their
// LOCALAI_* variables (core/cli/run.go: --address, --backends-path, --models-path, --api-keys; a flag wins over its
// variable, and LOCALAI_API_KEY is a comma-separated list), its model configs read from the models path (`name:` and
// `backend:` of each YAML file), its start logged as LocalAI's http server says it, and SIGINT or SIGTERM a graceful
// shutdown that stops its models first. As LocalAI's (pkg/signals: set up in an init(), so from the process's start,
// before it listens), the first SIGINT or SIGTERM runs the shutdown and exits 0, and any signal after it is ignored.
// `build` is what a release bakes into the binary: its version, how a broken build fails (it exits before
// listening, saying why), how long it takes to listen and to shut down.
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { StandInServer } from './standin-server.ts';

export interface StandInBuild {
  version: string;
  /** A broken build: its start fails with this message. */
  failStart?: string;
  /** A slow build: it listens only this long after its start. */
  readyAfterMs?: number;
  /** A build slow to shut down: its graceful shutdown takes this long. */
  stopTakesMs?: number;
}

const FLAGS: Record<string, string> = {
  '--address': 'LOCALAI_ADDRESS',
  '--backends-path': 'LOCALAI_BACKENDS_PATH',
  '--models-path': 'LOCALAI_MODELS_PATH',
  '--api-keys': 'LOCALAI_API_KEY',
};

export async function runLocalAi(build: StandInBuild, argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  if (argv[0] !== 'run') {
    process.stderr.write(`local-ai: expected "run", got ${JSON.stringify(argv[0] ?? '')}\n`);
    process.exit(80);
  }
  const given = flags(argv.slice(1));
  const option = (flag: string, fallback: string) => given.get(flag) ?? env[FLAGS[flag]!] ?? fallback;
  const address = option('--address', ':8080');
  const backendsDir = resolve(option('--backends-path', 'backends'));
  const modelsDir = resolve(option('--models-path', 'models'));
  const apiKeys = option('--api-keys', '').split(',').filter(Boolean);
  let server: StandInServer | null = null;
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log('INF', `Received ${signal}, shutting down`);
    void new Promise((resolve) => setTimeout(resolve, build.stopTakesMs ?? 0))
      .then(() => server?.stop())
      .then(() => process.exit(0));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  log('INF', `Starting LocalAI using ${process.env.THREADS ?? 4} threads, with models path: ${modelsDir}`);
  log('INF', `LocalAI version: ${build.version}`);
  if (build.failStart) {
    log('ERR', build.failStart);
    process.exit(1);
  }
  if (build.readyAfterMs) await new Promise((resolve) => setTimeout(resolve, build.readyAfterMs));
  const [host, port] = hostPort(address);
  if (apiKeys.length === 0 && host !== '127.0.0.1' && host !== 'localhost') {
    log('ERR', 'refusing to listen on a non-loopback address without API keys');
    process.exit(1);
  }
  const models = await modelConfigs(modelsDir);
  if (stopping) return;
  const started = new StandInServer({ backendsDir, models, apiKeys, version: build.version, healthAttempts: 200, healthIntervalMs: 20, loadFailureCooldownMs: 0, address: { host, port } });
  await started.start();
  server = started;
  log('INF', `LocalAI API is listening! Please connect to the endpoint for API documentation. endpoint=${started.url}`);
}

function flags(args: string[]): Map<string, string> {
  const found = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const [name, inline] = args[i]!.split(/=(.*)/s);
    if (!(name! in FLAGS)) {
      process.stderr.write(`local-ai: unknown flag ${name}\n`);
      process.exit(80);
    }
    found.set(name!, inline ?? args[++i] ?? '');
  }
  return found;
}

function hostPort(address: string): [string, number] {
  const at = address.lastIndexOf(':');
  return [address.slice(0, at) || '0.0.0.0', Number(address.slice(at + 1))];
}

/** Model id → backend, from the YAML configs in the models directory. */
async function modelConfigs(dir: string): Promise<Record<string, string>> {
  const models: Record<string, string> = {};
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (!/\.ya?ml$/.test(name)) continue;
    const config = parse(await readFile(join(dir, name), 'utf8')) as { name?: string; backend?: string } | null;
    if (config?.name && config.backend) models[config.name] = config.backend;
  }
  return models;
}

function log(level: string, message: string): void {
  process.stderr.write(`${new Date().toTimeString().slice(0, 8)} ${level} ${message}\n`);
}
