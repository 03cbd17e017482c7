import { loadPackageDefinition, type ServiceClientConstructor, type ServiceDefinition } from '@grpc/grpc-js';
import { fromJSON } from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { BACKEND_PROTO } from './backend-proto.ts';

export interface BackendService {
  /** Pass to `Server.addService`. */
  definition: ServiceDefinition;
  /** `new Client(address, credentials, options)` gives a client with Health, LoadModel, Status and Free. */
  Client: ServiceClientConstructor;
}

let cached: BackendService | undefined;

/**
 * The grpc-js view of `backend.Backend`. Field names keep LocalAI's capitals (`Model`, `ModelFile`), 64-bit
 * integers arrive as numbers, enums as their names (`READY`) and unset fields as their defaults.
 */
export function backendService(): BackendService {
  if (!cached) {
    const { root } = protobuf.parse(BACKEND_PROTO, { keepCase: true });
    const packageDefinition = fromJSON(root.toJSON(), { keepCase: true, longs: Number, enums: String, defaults: true });
    const backendPackage = loadPackageDefinition(packageDefinition).backend as Record<string, unknown>;
    const Client = backendPackage.Backend as ServiceClientConstructor;
    cached = { definition: Client.service, Client };
  }
  return cached;
}

