// A LocalAI worker's backends, models and gallery as Hangar's views show them, from what its protocol reports:
// backend.list rows (name, version, uri, digest, installed_at, meta, system) and models.running rows (model, replica,
// address). What the protocol does not carry (directories, pids, start times, cwd) is left unknown, never made up.
import { NEEDS_HANGAR_AGENT } from '../../shared/localai-worker.ts';
import type { BackendView, GalleryEntryView, ProcessView } from '../../shared/types.ts';
import { followedByName } from '../../shared/gallery-sources.ts';
import { DEVELOPMENT_SUFFIX, entryFacts, type GalleryEntry, isEntryCompatible, isMeta, metaResolution, upgradeOffered } from '../core/gallery/index.ts';
import type { ClusterGalleries } from './cluster-galleries.ts';
import type { RunningModel, WorkerBackend } from './protocol.ts';
import { oneLine } from '../../shared/error-text.ts';

/**
 * Whether LocalAI's upgrade check (CheckUpgradesAgainst) looks at a worker's row at all: not a system backend, and not
 * `X` while `X-development` is installed.
 */
function upgradeSkip(row: WorkerBackend, names: Set<string>): string | null {
  if (row.is_system) return 'a system backend: LocalAI manages it outside the gallery';
  const development = `${row.name}${DEVELOPMENT_SUFFIX}`;
  if (!row.name.endsWith(DEVELOPMENT_SUFFIX) && names.has(development)) return `${development} is installed, and LocalAI never offers ${row.name} over its development build`;
  return null;
}

export async function isWorkerRowUpgradable(row: WorkerBackend, entry: GalleryEntry | undefined, names: Set<string>, galleries: ClusterGalleries): Promise<boolean> {
  if (!entry || upgradeSkip(row, names) !== null) return false;
  const installed = { version: row.version || null, digest: row.digest || null, meta: row.is_meta };
  return upgradeOffered(installed, entry, (uri) => galleries.isOci(uri), (uri) => galleries.remoteDigest(uri));
}

/**
 * The worker's rows with what the cluster's galleries say of them; where the frontend's list of galleries cannot be
 * read, the rows as the worker reports them, each saying why no upgrade is known.
 */
export async function backendViews(rows: WorkerBackend[], processes: ProcessView[], galleries: ClusterGalleries): Promise<BackendView[]> {
  const listed = await galleries.entries().then(
    (entries) => ({ byName: followedByName(entries), problem: null }),
    (error: unknown) => ({ byName: new Map<string, GalleryEntry>(), problem: oneLine(error) }),
  );
  const { byName } = listed;
  const names = new Set(rows.map((r) => r.name));
  const sorted = [...rows].sort((a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name)));
  return Promise.all(
    sorted.map(async (row): Promise<BackendView> => {
      const entry = byName.get(row.name.toLowerCase());
      const upgradable = await isWorkerRowUpgradable(row, entry, names, galleries);
      const skip = upgradeSkip(row, names);
      const notes: string[] = [];
      if (row.is_meta) notes.push('A meta backend: the worker runs the build it points to for its own capability');
      if (skip) notes.push(row.is_system ? `A ${skip}` : `No upgrade offered, as in LocalAI: ${skip}`);
      return {
        name: row.name,
        kind: 'backend',
        runs: row.name,
        localai: notes,
        leftover: null,
        kept: null,
        alias: null,
        version: row.version || null,
        digest: row.digest || null,
        sha256: null,
        uri: row.uri || null,
        gallery: entry?.gallery ?? null,
        dir: '',
        installedAt: row.installed_at || null,
        metaBackendFor: null,
        upgradable,
        availableVersion: upgradable ? (entry?.version ?? null) : null,
        previous: null,
        broken: null,
        processes: processes.filter((p) => p.backend === row.name),
        ...(listed.problem !== null && { upgradesUnknown: listed.problem }),
      };
    }),
  );
}

/**
 * One row per model: LocalAI keys its processes by model and replica, Hangar's rows by model. models.running does not
 * say which backend runs a model, with one exception: the process backend.install starts with no model is keyed by
 * the backend's own name (buildProcessKey), so a model named like an installed backend is that backend's process.
 */
export function processViews(models: RunningModel[], backends: WorkerBackend[]): ProcessView[] {
  const installed = new Set(backends.map((b) => b.name));
  const byModel = new Map<string, RunningModel[]>();
  for (const m of models) byModel.set(m.model_id, [...(byModel.get(m.model_id) ?? []), m]);
  return [...byModel.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([model, replicas]): ProcessView => {
      replicas.sort((a, b) => a.replica_index - b.replica_index);
      const where = replicas.map((r) => `replica ${r.replica_index}${r.address ? ` at ${r.address}` : ''}`).join(', ');
      return {
        model,
        backend: installed.has(model) ? model : '',
        pid: 0,
        port: portOf(replicas[0]!.address),
        dir: '',
        startedAt: '',
        state: 'ready',
        cwd: 'unknown',
        cwdReason: `stale-cwd detection needs Hangar on the worker's machine: ${NEEDS_HANGAR_AGENT}`,
        procCwd: null,
        loaded: true,
        policy: 'never',
        restarts: 0,
        restartDelayMs: 0,
        maxRestarts: 0,
        message: `running on the LocalAI worker: ${where}`,
        error: null,
        exit: null,
        cpu: null,
        rss: null,
      };
    });
}

function portOf(address: string): number {
  const port = Number(/:(\d{1,5})$/.exec(address)?.[1]);
  return Number.isInteger(port) ? port : 0;
}

/** The cluster's gallery as this worker sees it: what it has, what it would upgrade, what runs on its capability. */
export async function galleryViews(rows: WorkerBackend[], capability: string, galleries: ClusterGalleries): Promise<GalleryEntryView[]> {
  const entries = await galleries.entries();
  const byName = followedByName(entries);
  const installed = new Map(rows.map((r) => [r.name.toLowerCase(), r]));
  const names = new Set(rows.map((r) => r.name));
  return Promise.all(
    entries.map(async (entry): Promise<GalleryEntryView> => {
      // Only the entry the worker follows (the first gallery that lists the name) is installed or upgradable.
      const row = byName.get(entry.name.toLowerCase()) === entry ? installed.get(entry.name.toLowerCase()) : undefined;
      const meta = isMeta(entry)
        ? metaResolution({
            meta: entry,
            capability,
            picked: null,
            byName: (name) => byName.get(name.toLowerCase()) ?? null,
            installedAs: Object.values(entry.capabilities ?? {}).find((build) => installed.has(build.toLowerCase())) ?? null,
          })
        : null;
      return {
        ...entryFacts(entry),
        installed: row !== undefined,
        upgradable: row !== undefined && (await isWorkerRowUpgradable(row, entry, names, galleries)),
        compatible: isEntryCompatible(entry, capability),
        meta,
      };
    }),
  );
}
