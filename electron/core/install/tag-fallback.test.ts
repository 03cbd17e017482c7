import assert from 'node:assert/strict';
import { test } from 'node:test';
import { tagFallbacks } from './tag-fallback.ts';

test('tag fallbacks: latest- becomes master- once, then the -development build; nothing for other tags', () => {
  const table: [string, string[]][] = [
    ['quay.io/go-skynet/local-ai-backends:latest-cpu-llama-cpp', ['quay.io/go-skynet/local-ai-backends:master-cpu-llama-cpp', 'quay.io/go-skynet/local-ai-backends:master-cpu-llama-cpp-development']],
    ['r.io/a:latest-x-development', ['r.io/a:master-x-development']],
    ['r.io/a:latest-latest-x', ['r.io/a:master-latest-x', 'r.io/a:master-latest-x-development']],
    ['r.io/a:master-x', []],
    ['r.io/a:v1.2.3', []],
    ['./backends/echo', []],
  ];
  for (const [uri, expected] of table) assert.deepEqual(tagFallbacks(uri), expected, uri);
});
