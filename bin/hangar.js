#!/usr/bin/env -S node --max-semi-space-size=2
// A small young generation: the agent parses large galleries now and then, and V8 would otherwise keep the heap
// that burst grew to for good (LocalAI's index: 114 MB resident instead of under 90).
import '../dist/agent/cli.js';
