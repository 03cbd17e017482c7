export * from './types.ts';
export * from './api.ts';
export * from './schemas.ts';
export * from './errors.ts';
export * from './wire.ts';
export * from './wire-client.ts';
export * from './event-schema.ts';
export * from './selector.ts';
