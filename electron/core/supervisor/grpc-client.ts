import { credentials, Metadata, status, type Client, type ServiceError } from '@grpc/grpc-js';
import { backendService } from '../../../backends/proto/service.ts';

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
    super(`${method} failed (${status[grpcCode] ?? grpcCode}): ${details}`);
    this.name = 'BackendCallError';
  }
}

type Callback = (error: ServiceError | null, response?: unknown) => void;
type UnaryMethod = (request: object, metadata: Metadata, options: { deadline: number }, callback: Callback) => void;

// A backend is polled for Health right after its port opens: reconnect fast instead of waiting out grpc-js'
// default one-second backoff after a refused early attempt.
const channelOptions = {
  'grpc.initial_reconnect_backoff_ms': 5,
  'grpc.max_reconnect_backoff_ms': 50,
};

/** One reusable channel to a LocalAI-style backend (`backend.Backend` over plaintext gRPC on loopback). */
export class BackendClient {
  readonly #client: Client & Record<string, UnaryMethod>;
  readonly #token: string | undefined;

  constructor(address: string, options: { token?: string } = {}) {
    const { Client } = backendService();
    this.#client = new Client(address, credentials.createInsecure(), channelOptions) as Client & Record<string, UnaryMethod>;
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

  async status(timeoutMs: number): Promise<{ state: string }> {
    const response = (await this.#call('Status', {}, timeoutMs)) as { state: string };
    return { state: response.state };
  }

  async free(timeoutMs: number): Promise<BackendResult> {
    return toResult(await this.#call('Free', {}, timeoutMs));
  }

  close(): void {
    this.#client.close();
  }

  #call(method: string, request: object, timeoutMs: number): Promise<unknown> {
    const metadata = new Metadata();
    if (this.#token) metadata.set('authorization', `Bearer ${this.#token}`);
    return new Promise((resolve, reject) => {
      this.#client[method]!(request, metadata, { deadline: Date.now() + timeoutMs }, (error, response) => {
        if (error) reject(new BackendCallError(method, error.code, error.details || error.message));
        else resolve(response);
      });
    });
  }
}

function toResult(response: unknown): BackendResult {
  const { success, message } = response as BackendResult;
  return { success, message };
}
