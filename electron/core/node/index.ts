// The node's parts others build on: what a co-runner (the LocalAI server) is given and gives, the node's options,
// and the counts a node's card shows.
export type { CoRunner, CoRunnerContext, ReloadOptions } from './co-runner.ts';
export type { LocalNodeOptions } from './options.ts';
export { countsOf } from './catalog.ts';
