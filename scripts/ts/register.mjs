// `node --import ./scripts/ts/register.mjs FILE.ts`: runs the TypeScript sources as they are, for the tests. What tsx
// does for them, at less than half its start: each test file's process paid ~0.45 s of CPU for tsx against ~0.2 s for
// these hooks, over some 230 processes a run. Types are only stripped (tsc checks them): each file is transformed on
// its own by esbuild, once per content, into a cache every process of the run shares.
import { register } from 'node:module';

process.setSourceMapsEnabled(true);
register('./hooks.mjs', import.meta.url);
