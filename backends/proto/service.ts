import { makeClientConstructor, type MethodDefinition, type ServiceClientConstructor, type ServiceDefinition } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { BACKEND_PROTO } from './backend-proto.ts';

export interface BackendService {
  /** Pass to `Server.addService`. */
  definition: ServiceDefinition;
  /** `new Client(address, credentials, options)` gives a client with Health, LoadModel, Status and Free. */
  Client: ServiceClientConstructor;
}

const SERVICE = 'backend.Backend';
/** 64-bit integers as numbers, enums as their names (`READY`), unset fields as their defaults. */
const AS_OBJECT: protobuf.IConversionOptions = { longs: Number, enums: String, defaults: true };

let cached: BackendService | undefined;

/**
 * The grpc-js view of `backend.Backend`, built from protobufjs's types directly: @grpc/proto-loader also builds a
 * reflection descriptor of every message, which no one here asks for, and made loading the protocol (a backend's
 * start, the host's first call) three times as costly. Field names keep LocalAI's capitals (`Model`, `ModelFile`).
 */
export function backendService(): BackendService {
  if (!cached) {
    const { root } = protobuf.parse(BACKEND_PROTO, { keepCase: true });
    const methods = root.lookupService(SERVICE).methodsArray.map((method) => [method.name, unary(method)] as const);
    const definition: ServiceDefinition = Object.fromEntries(methods);
    cached = { definition, Client: makeClientConstructor(definition, SERVICE) };
  }
  return cached;
}

function unary(method: protobuf.Method): MethodDefinition<object, object> {
  method.resolve();
  const request = method.resolvedRequestType!;
  const response = method.resolvedResponseType!;
  return {
    path: `/${SERVICE}/${method.name}`,
    requestStream: false,
    responseStream: false,
    requestSerialize: (value) => asBuffer(request.encode(request.fromObject(value)).finish()),
    requestDeserialize: (bytes) => request.toObject(request.decode(bytes), AS_OBJECT),
    responseSerialize: (value) => asBuffer(response.encode(response.fromObject(value)).finish()),
    responseDeserialize: (bytes) => response.toObject(response.decode(bytes), AS_OBJECT),
  };
}

/** The encoded bytes as the Buffer grpc-js sends, over the same memory: not copied. */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
