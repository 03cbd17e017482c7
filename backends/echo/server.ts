// The starter echo backend: a LocalAI-style gRPC backend that loads no model. LoadModel and Predict read ./VERSION
// relative to its working directory on purpose, so a process whose directory was swapped away by a reinstall fails the
// way real backends do: Health stays OK, LoadModel and the next request fail with ENOENT. Predict answers the prompt
// with the build that serves it.
import { readFileSync } from 'node:fs';
import { timingSafeEqual } from 'node:crypto';
import {
  Server,
  ServerCredentials,
  status,
  type sendUnaryData,
  type ServerUnaryCall,
  type ServiceError,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { backendService } from '../proto/service.ts';

interface ModelOptions {
  Model: string;
  ModelFile: string;
}

interface PredictOptions {
  Prompt: string;
}

type State = 'UNINITIALIZED' | 'READY';
let state: State = 'UNINITIALIZED';

function fail(code: status, details: string): Partial<ServiceError> {
  return { code, details };
}

/** LocalAI's backend auth: with LOCALAI_GRPC_AUTH_TOKEN set, every call carries `authorization: Bearer <token>`. */
function authorized(call: ServerUnaryCall<unknown, unknown>): boolean {
  const token = process.env.LOCALAI_GRPC_AUTH_TOKEN;
  if (!token) return true;
  const sent = Buffer.from(String(call.metadata.get('authorization')[0] ?? ''));
  const expected = Buffer.from(`Bearer ${token}`);
  return sent.length === expected.length && timingSafeEqual(sent, expected);
}

/** Wraps a handler with the auth check and turns a thrown error into a gRPC INTERNAL carrying the raw message. */
function unary<Req, Res>(handle: (request: Req) => Res) {
  return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
    if (!authorized(call)) return callback(fail(status.UNAUTHENTICATED, 'missing or invalid bearer token'));
    try {
      callback(null, handle(call.request));
    } catch (error) {
      callback(fail(status.INTERNAL, error instanceof Error ? error.message : String(error)));
    }
  };
}

const handlers: UntypedServiceImplementation = {
  Health: unary(() => ({ message: Buffer.from('OK') })),
  LoadModel: unary((request: ModelOptions) => {
    const version = readFileSync('VERSION', 'utf8').trim();
    state = 'READY';
    return { success: true, message: `loaded ${request.Model || request.ModelFile} with echo ${version}` };
  }),
  Predict: unary((request: PredictOptions) => {
    const version = readFileSync('VERSION', 'utf8').trim();
    return { message: Buffer.from(`echo ${version}: ${request.Prompt}`) };
  }),
  // Its memory as a backend may report it (StatusResponse.memory), which LocalAI's /backend/monitor passes on.
  Status: unary(() => {
    // One reading for both: the total is its resident memory, all of it.
    const rss = process.memoryUsage().rss;
    return { state, memory: { total: rss, breakdown: { rss } } };
  }),
  Free: unary(() => {
    state = 'UNINITIALIZED';
    return { success: true, message: 'freed' };
  }),
};

function addressFromArgs(args: string[]): string {
  const index = args.findIndex((arg) => arg === '--addr' || arg.startsWith('--addr='));
  const address = index < 0 ? undefined : args[index]!.includes('=') ? args[index]!.slice('--addr='.length) : args[index + 1];
  if (!address) {
    process.stderr.write('echo: usage: run.sh --addr HOST:PORT\n');
    process.exit(2);
  }
  return address;
}

const address = addressFromArgs(process.argv.slice(2));
const server = new Server();
server.addService(backendService().definition, handlers);
server.bindAsync(address, ServerCredentials.createInsecure(), (error, port) => {
  if (error) {
    process.stderr.write(`echo: cannot listen on ${address}: ${error.message}\n`);
    process.exit(1);
  }
  const host = address.slice(0, address.lastIndexOf(':'));
  process.stderr.write(`echo: listening on ${host}:${port}\n`);
});

function stop() {
  server.tryShutdown(() => process.exit(0));
  setTimeout(() => {
    server.forceShutdown();
    process.exit(0);
  }, 2000).unref();
}
process.once('SIGTERM', stop);
process.once('SIGINT', stop);

// As LocalAI's backends do: exit once the parent that started us is gone (we were reparented), unless
// LOCALAI_BACKEND_PARENT_WATCH says not to. Hangar sets it to false so kept backends outlive the host.
const parentWatchOff = ['false', '0', 'no', 'off'].includes((process.env.LOCALAI_BACKEND_PARENT_WATCH ?? '').trim().toLowerCase());
if (!parentWatchOff && process.platform !== 'win32') {
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) stop();
  }, 500).unref();
}
