#!/bin/sh
':' //; skip=; for a; do if [ -n "$skip" ]; then skip=; continue; fi; case $a in --node|--token|--home) skip=1;; agent) agent=1; break;; -*) ;; *) break;; esac; done; cli=$(dirname "$(realpath "$0" 2>/dev/null || readlink -f "$0" 2>/dev/null || echo "$0")")/../dist/agent/cli.js; if [ -n "$agent" ]; then exec node --max-semi-space-size=2 --initial-old-space-size=32 "$cli" "$@"; fi; exec node "$cli" "$@"
// Run by sh (its first line): `hangar agent` starts Node with a small young generation, since V8 keeps for good the
// young generation it grew to while the agent started (an idle agent: 74 MB resident instead of 83; a large gallery
// is parsed in a worker thread either way, so its burst no longer adds to it), and with room in its old generation
// from the start: with V8's own first limit, an install streaming 200 MB through buffers set off 7 to 18 full
// collections of the agent's heap once a few installs had run (a random 200 MB tree took 0.65 to 0.95 s instead of
// 0.4), with this one none; at rest it costs 1 to 3 MB. Every other command starts without them: the flags cost every
// command time (more scavenges while the CLI loads). Run by Node (`node bin/hangar.js`, or npm's shim where there is
// no sh), the line above is a string and a comment, and this file starts the CLI without the flags.
import '../dist/agent/cli.js';
