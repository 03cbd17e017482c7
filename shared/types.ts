// DTOs that cross every transport (Electron IPC, WebSocket), by domain. Plain JSON only: no bigint, no Date.
export type * from './types/processes.ts';
export type * from './types/backends.ts';
export type * from './types/nodes.ts';
export type * from './types/settings.ts';
export type * from './types/cluster.ts';
export type * from './types/localai.ts';
export type * from './types/errors.ts';
