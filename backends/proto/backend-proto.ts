/**
 * The subset of LocalAI's backend gRPC protocol (`package backend; service Backend`, backend/backend.proto) that
 * Hangar speaks. Package, service, method and message names and every field number match LocalAI's, so any LocalAI
 * backend answers these calls; fields Hangar does not use are left out (protobuf skips unknown fields).
 * Kept as text in a module so a bundled backend or client needs no .proto file on disk.
 */
export const BACKEND_PROTO = `
syntax = "proto3";

package backend;

service Backend {
  rpc Health(HealthMessage) returns (Reply) {}
  rpc Predict(PredictOptions) returns (Reply) {}
  rpc LoadModel(ModelOptions) returns (Result) {}
  rpc Status(HealthMessage) returns (StatusResponse) {}
  rpc Free(HealthMessage) returns (Result) {}
}

message HealthMessage {}

message Reply {
  bytes message = 1;
  int32 tokens = 2;
  int32 prompt_tokens = 3;
}

message PredictOptions {
  string Prompt = 1;
}

message ModelOptions {
  string Model = 1;
  int32 ContextSize = 2;
  int32 Seed = 3;
  int32 NBatch = 4;
  int32 Threads = 15;
  string ModelFile = 21;
  string ModelPath = 59;
  repeated string Options = 62;
}

message Result {
  string message = 1;
  bool success = 2;
}

message MemoryUsageData {
  uint64 total = 1;
  map<string, uint64> breakdown = 2;
}

message StatusResponse {
  enum State {
    UNINITIALIZED = 0;
    BUSY = 1;
    READY = 2;
    ERROR = -1;
  }
  State state = 1;
  MemoryUsageData memory = 2;
}
`;
