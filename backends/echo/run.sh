#!/bin/sh
# Starts the echo backend: run.sh --addr HOST:PORT. The host names the Node runtime in HANGAR_NODE
# (inside Electron: its own binary with ELECTRON_RUN_AS_NODE=1). --no-lazy compiles the small bundle up front, so
# the first Health is not slowed by lazy compilation of the gRPC server's request path.
DIR=$(cd -- "$(dirname -- "$0")" && pwd) || exit 1
exec "${HANGAR_NODE:-node}" --no-lazy "$DIR/server.cjs" "$@"
