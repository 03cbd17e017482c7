// A model's LocalAI config in the models directory may say how long its backend takes to start: LocalAI waits
// `grpc.attempts` Health checks `grpc.attempts_sleep_time` seconds apart (20 × 2 s when unset;
// core/backend/options.go, pkg/model/initializers.go). A model LocalAI was told needs longer gets as long here. Configs are the models
// directory's *.yaml and *.yml files that are not dotfiles, each one config or a list of them, named by `name:`.
import { readdir } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { load } from 'js-yaml';
import { readPlacedFile } from '../placed-file.ts';

const LOCALAI_ATTEMPTS = 20;
const LOCALAI_ATTEMPT_SLEEP_S = 2;
/** A model config is a few KiB: a larger file is not read whole. */
const CONFIG_MAX_BYTES = 256 * 1024;

interface GrpcOptions {
  attempts?: unknown;
  attempts_sleep_time?: unknown;
}

/** The start limit the model's LocalAI config sets (attempts × sleep), or null when none names it or sets grpc. */
export async function modelConfigStartLimitMs(modelsDir: string, model: string): Promise<number | null> {
  const names = await readdir(modelsDir).catch(() => [] as string[]);
  const configs = names.filter((name) => !name.startsWith('.') && ['.yaml', '.yml'].includes(extname(name).toLowerCase()));
  const named = (name: string) => name.slice(0, -extname(name).length) === model;
  // LocalAI's gallery writes <model>.yaml: looked at first.
  for (const name of [...configs.filter(named), ...configs.filter((name) => !named(name))]) {
    const grpc = grpcOf(await readSmall(join(modelsDir, name)), model);
    if (grpc) return startLimit(grpc);
  }
  return null;
}

/** A config that cannot be read, or is not a small regular file (a FIFO, a link to a device), names no limit. */
function readSmall(path: string): Promise<string | null> {
  return readPlacedFile(path, { maxBytes: CONFIG_MAX_BYTES, tooLarge: () => 'too large' }).catch(() => null);
}

/** The grpc options of the config named `model` in `text`, when it sets any. */
function grpcOf(text: string | null, model: string): GrpcOptions | null {
  if (text === null) return null;
  let parsed: unknown;
  try {
    parsed = load(text, { maxAliases: 100 });
  } catch {
    return null;
  }
  const configs = Array.isArray(parsed) ? parsed : [parsed];
  const config = configs.find((c): c is { name: unknown; grpc?: unknown } => typeof c === 'object' && c !== null && (c as { name?: unknown }).name === model);
  const grpc = config?.grpc;
  return typeof grpc === 'object' && grpc !== null ? (grpc as GrpcOptions) : null;
}

function startLimit(grpc: GrpcOptions): number | null {
  const attempts = positive(grpc.attempts);
  const sleep = positive(grpc.attempts_sleep_time);
  if (attempts === null && sleep === null) return null;
  return (attempts ?? LOCALAI_ATTEMPTS) * (sleep ?? LOCALAI_ATTEMPT_SLEEP_S) * 1000;
}

function positive(value: unknown): number | null {
  return Number.isInteger(value) && (value as number) > 0 ? (value as number) : null;
}
