"""A LocalAI-style Python backend for tests (grpcio + protobuf from Debian, no generated stubs).

LoadModel resolves the model path with os.path.abspath and reads ./VERSION, both relative to the working
directory, like real Python backends; Predict reads ./VERSION at each request. When a reinstall has swapped that
directory away, Health still answers OK and LoadModel and Predict fail with FileNotFoundError, which is the failure
Hangar has to detect and explain.
"""

import argparse
import hmac
import os
import signal
import sys
from concurrent import futures

import grpc
from google.protobuf import descriptor_pb2, message_factory

FieldProto = descriptor_pb2.FieldDescriptorProto


def _messages():
    """Builds the message classes for the subset of LocalAI's backend.proto this backend uses (same numbers)."""
    file = descriptor_pb2.FileDescriptorProto(name="hangar_pyecho_backend.proto", package="backend", syntax="proto3")

    def message(name, *fields):
        msg = file.message_type.add(name=name)
        for field_name, number, kind in fields:
            msg.field.add(name=field_name, number=number, type=kind, label=FieldProto.LABEL_OPTIONAL)
        return msg

    message("HealthMessage")
    message("PredictOptions", ("Prompt", 1, FieldProto.TYPE_STRING))
    message("Reply", ("message", 1, FieldProto.TYPE_BYTES))
    message(
        "ModelOptions",
        ("Model", 1, FieldProto.TYPE_STRING),
        ("ModelFile", 21, FieldProto.TYPE_STRING),
        ("ModelPath", 59, FieldProto.TYPE_STRING),
    )
    message("Result", ("message", 1, FieldProto.TYPE_STRING), ("success", 2, FieldProto.TYPE_BOOL))
    status = message("StatusResponse")
    state = status.enum_type.add(name="State")
    for name, number in (("UNINITIALIZED", 0), ("BUSY", 1), ("READY", 2), ("ERROR", -1)):
        state.value.add(name=name, number=number)
    status.field.add(
        name="state", number=1, type=FieldProto.TYPE_ENUM, type_name=".backend.StatusResponse.State",
        label=FieldProto.LABEL_OPTIONAL,
    )
    classes = message_factory.GetMessages([file])
    return {name.split(".")[-1]: cls for name, cls in classes.items()}


M = _messages()


class Backend:
    def __init__(self):
        self.state = "UNINITIALIZED"

    def Health(self, _request, _context):
        return M["Reply"](message=b"OK")

    def LoadModel(self, request, _context):
        path = os.path.abspath(request.ModelFile or "model")
        with open("VERSION", encoding="utf-8") as file:
            version = file.read().strip()
        self.state = "READY"
        return M["Result"](success=True, message=f"loaded {request.Model} from {path} with pyecho {version}")

    def Predict(self, request, _context):
        with open("VERSION", encoding="utf-8") as file:
            version = file.read().strip()
        return M["Reply"](message=f"pyecho {version}: {request.Prompt}".encode())

    def Status(self, _request, _context):
        return M["StatusResponse"](state=self.state)

    def Free(self, _request, _context):
        self.state = "UNINITIALIZED"
        return M["Result"](success=True, message="freed")


def _guarded(method):
    """LocalAI's bearer-token check, and any exception returned as INTERNAL carrying 'ExceptionType: message'."""
    token = os.environ.get("LOCALAI_GRPC_AUTH_TOKEN", "")

    def handle(request, context):
        if token:
            sent = dict(context.invocation_metadata()).get("authorization", "")
            if not hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")
        try:
            return method(request, context)
        except Exception as error:  # noqa: BLE001 - every failure goes back to the caller
            context.abort(grpc.StatusCode.INTERNAL, f"{type(error).__name__}: {error}")

    return handle


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--addr", required=True, help="HOST:PORT to listen on")
    address = parser.parse_args().addr

    backend = Backend()
    requests = {
        "Health": "HealthMessage", "Predict": "PredictOptions", "LoadModel": "ModelOptions", "Status": "HealthMessage", "Free": "HealthMessage",
    }
    handlers = {
        name: grpc.unary_unary_rpc_method_handler(
            _guarded(getattr(backend, name)),
            request_deserializer=M[request].FromString,
            response_serializer=lambda reply: reply.SerializeToString(),
        )
        for name, request in requests.items()
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("backend.Backend", handlers),))
    port = server.add_insecure_port(address)
    if port == 0:
        print(f"pyecho: cannot listen on {address}", file=sys.stderr, flush=True)
        sys.exit(1)
    server.start()
    print(f"pyecho: listening on {address.rsplit(':', 1)[0]}:{port}", file=sys.stderr, flush=True)

    def stop(_signum, _frame):
        server.stop(grace=1)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
