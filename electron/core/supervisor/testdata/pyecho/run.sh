#!/bin/sh
# Starts the Python test backend: run.sh --addr HOST:PORT. Debian's python3-grpcio is importable only from
# /usr/bin/python3; HANGAR_PYTHON names another interpreter.
DIR=$(cd -- "$(dirname -- "$0")" && pwd) || exit 1
exec "${HANGAR_PYTHON:-/usr/bin/python3}" "$DIR/server.py" "$@"
