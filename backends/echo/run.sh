#!/bin/sh
# Starts the echo backend: run.sh --addr HOST:PORT. The host names the Node runtime in HANGAR_NODE
# (inside Electron: its own binary with ELECTRON_RUN_AS_NODE=1). Compiled lazily, as Node does by default: measured,
# its first Health comes sooner (~150 against ~200 ms from the spawn) and costs less CPU than with --no-lazy.
DIR=$(cd -- "$(dirname -- "$0")" && pwd) || exit 1
exec "${HANGAR_NODE:-node}" "$DIR/server.cjs" "$@"
