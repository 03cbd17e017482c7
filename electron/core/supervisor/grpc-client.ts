import type { Client, ServiceError } from '@grpc/grpc-js';
import type { Metadata } from '@grpc/grpc-js';

/** gRPC and the protocol load on the first call, or when the host warms up (Supervisor.warmUp): not at the host's start. */
let runtime: Promise<{ grpc: typeof import('@grpc/grpc-js'); Client: typeof Client }> | undefined;
export function loadRuntime() {
  return (runtime ??= Promise.all([import('@grpc/grpc-js'), import('../../../backends/proto/service.ts')]).then(([grpc, service]) => ({
    grpc,
    Client: service.backendService().Client,
  })));
}

// gRPC status names by code (the protocol's fixed list), so an error reads "INTERNAL" rather than 13.
const STATUS_NAMES = [
  'OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND', 'ALREADY_EXISTS', 'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED', 'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE',
  'DATA_LOSS', 'UNAUTHENTICATED',
];

export interface LoadModelRequest {
  model: string;
  modelFile: string;
  modelPath: string;
}

export interface BackendResult {
  success: boolean;
  message: string;
}

/** A failed call to a backend: the gRPC status code and the backend's own details (e.g. its ENOENT message). */
export class BackendCallError extends Error {
  constructor(
    readonly method: string,
    readonly grpcCode: number,
    readonly details: string,
  ) {
    super(`${method} failed (${STATUS_NAMES[grpcCode] ?? grpcCode}): ${details}`);
    this.name = 'BackendCallError';
  }
}

type Callback = (error: ServiceError | null, response?: unknown) => void;
type UnaryMethod = (request: object, metadata: Metadata, options: { deadline: number }, callback: Callback) => void;

// A backend is probed for Health right after its port opens. Low backoffs keep grpc-js from waiting out its default
// one-second reconnect delay, and a private subchannel pool lets a replacement channel dial afresh instead of
// inheriting a shared subchannel's failure state.
const channelOptions = {
  'grpc.initial_reconnect_backoff_ms': 5,
  'grpc.max_reconnect_backoff_ms': 50,
  'grpc.use_local_subchannel_pool': 1,
};

/**
 * A client for one LocalAI-style backend (`backend.Backend`, plaintext gRPC on loopback). Calls share one channel
 * and fail fast rather than wait for a connection. A call that finds the backend UNAVAILABLE retires the channel:
 * grpc-js would otherwise keep failing calls until its next reconnect attempt, even once the port is open.
 */
export class BackendClient {
  readonly #address: string;
  readonly #token: string | undefined;
  #channel: (Client & Record<string, UnaryMethod>) | undefined;

  constructor(address: string, options: { token?: string } = {}) {
    this.#address = address;
    this.#token = options.token;
  }

  /** Resolves the Reply message text; a ready backend answers "OK". */
  async health(timeoutMs: number): Promise<string> {
    const reply = (await this.#call('Health', {}, timeoutMs)) as { message: Uint8Array };
    return Buffer.from(reply.message).toString('utf8');
  }

  async loadModel(req: LoadModelRequest, timeoutMs: number): Promise<BackendResult> {
    const options = { Model: req.model, ModelFile: req.modelFile, ModelPath: req.modelPath };
    return toResult(await this.#call('LoadModel', options, timeoutMs));
  }

  /** The text a backend answers a prompt with. */
  async predict(prompt: string, timeoutMs: number): Promise<string> {
    const reply = (await this.#call('Predict', { Prompt: prompt }, timeoutMs)) as { message: Uint8Array };
    return Buffer.from(reply.message).toString('utf8');
  }

  /** The backend's state, and the memory it reports for itself (StatusResponse.memory), where it does. */
  async status(timeoutMs: number): Promise<{ state: string; memory: { total: number; breakdown: Record<string, number> } | null }> {
    const response = (await this.#call('Status', {}, timeoutMs)) as { state: string; memory?: { total: number; breakdown?: Record<string, number> } | null };
    return { state: response.state, memory: response.memory ? { total: response.memory.total, breakdown: response.memory.breakdown ?? {} } : null };
  }

  async free(timeoutMs: number): Promise<BackendResult> {
    return toResult(await this.#call('Free', {}, timeoutMs));
  }

  close(): void {
    this.#channel?.close();
    this.#channel = undefined;
  }

  async #call(method: string, request: object, timeoutMs: number): Promise<unknown> {
    const { grpc, Client } = await loadRuntime();
    const channel = (this.#channel ??= new Client(this.#address, grpc.credentials.createInsecure(), channelOptions) as Client &
      Record<string, UnaryMethod>);
    const metadata = new grpc.Metadata();
    if (this.#token) metadata.set('authorization', `Bearer ${this.#token}`);
    return new Promise((resolve, reject) => {
      channel[method]!(request, metadata, { deadline: Date.now() + timeoutMs }, (error, response) => {
        if (!error) return resolve(response);
        if (error.code === grpc.status.UNAVAILABLE && this.#channel === channel) this.close();
        reject(new BackendCallError(method, error.code, error.details || error.message));
      });
    });
  }
}

function toResult(response: unknown): BackendResult {
  const { success, message } = response as BackendResult;
  return { success, message };
}
