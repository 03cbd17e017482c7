// Node's arguments for a TypeScript file run in a process of its own: the hooks the test run itself uses (scripts/ts).
export const TS_NODE = ['--import', new URL('../../../scripts/ts/register.mjs', import.meta.url).href];
