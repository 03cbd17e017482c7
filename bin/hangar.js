#!/bin/sh
':' //; skip=; for a; do if [ -n "$skip" ]; then skip=; continue; fi; case $a in --node|--token|--home) skip=1;; agent) agent=1; break;; -*) ;; *) break;; esac; done; cli=$(dirname "$(realpath "$0" 2>/dev/null || readlink -f "$0" 2>/dev/null || echo "$0")")/../dist/agent/cli.js; if [ -n "$agent" ]; then exec node --max-semi-space-size=2 "$cli" "$@"; fi; exec node "$cli" "$@"
// Run by sh (its first line): `hangar agent` starts Node with a small young generation, since V8 keeps for good the
// young generation it grew to while the agent started (an idle agent: 74 MB resident instead of 83; a large gallery
// is parsed in a worker thread either way, so its burst no longer adds to it). Every other command starts without it:
// the flag costs every command time (more scavenges while the CLI loads). Run by Node (`node bin/hangar.js`, or npm's
// shim where there is no sh), the line above is a string and a comment, and this file starts the CLI without the flag.
import '../dist/agent/cli.js';
