// What each node method returns, as a schema: a host takes a reply from another node only when it parses here, so a
// node that answers with the wrong shape (or a forged one) gives an error, never a value a view or the CLI trips on.
import * as z from 'zod';
import type { NodeApi, NodeMethod } from './api.ts';
import {
  backendSchema, galleryEntrySchema, galleryProblemSchema, jobSchema, logLineSchema, nodeResourcesSchema, processSchema, settingsViewSchema,
} from './event-schema.ts';
import type { LoadResult, NodeInfo, ResourcesView, ScanEntry, UpgradeAllResult } from './types.ts';

const short = z.string().max(1024);
const path = z.string().max(4096);
const message = z.string().max(16 * 1024);
const count = z.number().int().min(0);
/** A listing of any size a node could hold (5,000 backends, a gallery of thousands). */
const many = 100_000;

const nodeInfoSchema: z.ZodType<NodeInfo> = z.object({
  id: short,
  name: short,
  platform: short,
  arch: short,
  capability: short,
  home: path,
  backendsDir: path,
  modelsDir: path,
  galleries: z.array(short).max(1000),
  galleryProblems: z.array(galleryProblemSchema).max(1000),
  version: short,
  processTracking: message,
  addresses: z.array(short).max(1000),
});

const upgradeAllSchema: z.ZodType<UpgradeAllResult> = z.object({ backend: short, ok: z.boolean(), error: message.nullable(), job: jobSchema.nullable() });
const loadResultSchema: z.ZodType<LoadResult> = z.object({ pid: count, port: count, reused: z.boolean(), message });
const scanEntrySchema: z.ZodType<ScanEntry> = z.object({
  pid: count,
  command: message,
  cwd: path,
  status: z.enum(['ok', 'stale', 'unknown']),
  supervised: z.boolean(),
  backend: short.nullable(),
});
const resourcesSchema: z.ZodType<ResourcesView> = z.intersection(
  nodeResourcesSchema,
  z.object({ processes: z.array(z.object({ model: short, pid: count, vramBytes: z.number().min(0) })).max(many) }),
);
const nothing = z.undefined().or(z.null()).transform(() => undefined);

export const nodeResultSchemas: { [M in NodeMethod]: z.ZodType<Awaited<ReturnType<NodeApi[M]>>> } = {
  info: nodeInfoSchema,
  gallery: z.array(galleryEntrySchema).max(many),
  backends: z.array(backendSchema).max(many),
  processes: z.array(processSchema).max(many),
  jobs: z.array(jobSchema).max(many),
  install: jobSchema,
  upgrade: jobSchema,
  upgradeAll: z.array(upgradeAllSchema).max(many),
  installVersion: jobSchema,
  rollback: jobSchema,
  chooseVariant: galleryEntrySchema,
  delete: jobSchema,
  resolveLeftover: nothing,
  waitJob: jobSchema,
  cancelJob: jobSchema,
  load: loadResultSchema,
  respawn: processSchema,
  restart: processSchema,
  respawnBackend: z.array(processSchema).max(many),
  stop: nothing,
  unload: processSchema,
  stopProcess: nothing,
  scan: z.array(scanEntrySchema).max(many),
  logs: z.array(logLineSchema).max(many),
  settings: settingsViewSchema,
  updateSettings: settingsViewSchema,
  resources: resourcesSchema,
  drain: z.array(short).max(many),
};
