// Gate 6: a LoadModel that failed in a process whose directory a reinstall replaced (it answered Health, then could
// not open a relative path) is explained, the process is replaced by one from the live directory, and the load is
// tried once more there. Any other failure is the load's own.
import { HangarError } from '../../../shared/index.ts';
import type { LoadModelRequest } from './grpc-client.ts';
import type { Launcher } from './launcher.ts';
import { loadError, type Loader } from './loading.ts';
import type { ModelLogs } from './model-logs.ts';
import { tell, type BackendTarget, type Proc } from './process-records.ts';
import type { Rechecks } from './rechecks.ts';
import type { Stopping } from './stopping.ts';

export interface StaleLoadParts {
  rechecks: Rechecks;
  stopping: Stopping;
  launcher: Launcher;
  loader: Loader;
  logs: ModelLogs;
}

/** After `failure` in `proc`: the respawned process and what its load said, or the error the user is given. */
export async function loadAfterFailure(parts: StaleLoadParts, proc: Proc, target: BackendTarget, request: LoadModelRequest, failure: unknown): Promise<{ proc: Proc; message: string }> {
  const { rechecks, stopping, launcher, loader, logs } = parts;
  await rechecks.refresh(proc);
  if (proc.cwd.cwd !== 'stale') throw loader.fail(proc, loadError(proc, failure));
  const why = `backend ${proc.backend} (pid ${proc.pid}) was running from a directory that a reinstall replaced`;
  await stopping.process(proc, true);
  const fresh = await launcher.spawnReady(target, proc.model, true, true).catch((err: Error) => {
    throw new HangarError('failed', `${why}; the respawn failed: ${err.message}`);
  });
  logs.note(fresh, `${why}; respawned from ${target.dir}`);
  const replaced = `respawned pid ${proc.pid} → ${fresh.pid}: its directory was replaced`;
  tell(fresh, replaced);
  try {
    return { proc: fresh, message: `${replaced}; ${await loader.into(fresh, request)}` };
  } catch (second) {
    throw loader.fail(fresh, new HangarError('failed', `${why}; after a respawn, ${loadError(fresh, second).message}`));
  }
}
