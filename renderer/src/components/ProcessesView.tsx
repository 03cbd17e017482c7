import { Fragment, useCallback, useEffect, useMemo, useState } from 'react';
import { cwdVerdict, type CwdVerdict } from '../../../shared/process-text.ts';
import type { ScanEntry } from '../../../shared/types.ts';
import { scanProcesses, stopProcess } from '../state/actions.ts';
import { useBackends } from '../state/backends.ts';
import { useRefusal } from '../state/node.ts';
import { ActionButton } from './ActionButton.tsx';
import { Loading } from './BackendsView.tsx';
import { ConfirmDialog } from './ConfirmDialog.tsx';
import { isEnded } from './ProcessState.tsx';
import { StaleBadge } from './StaleBadge.tsx';
import { SupervisedProcesses } from './SupervisedProcesses.tsx';
import { useAction } from './useAction.ts';
import { Alert } from './Message.tsx';

const SUPERVISED_HINT = 'Respawn it from the Backends view to run the current install.';
const UNSUPERVISED_HINT = 'Hangar did not start it: restart it yourself to run the current install.';
const LOCALAI_HINT = 'The LocalAI server runs it: Respawn in its row above brings it back on the current install.';

/** A scan entry with the one verdict its process gets everywhere (a supervised one's is its supervisor's). */
interface Judged {
  entry: ScanEntry;
  verdict: CwdVerdict;
  /** A linked LocalAI server runs it. */
  byLocalAi: boolean;
}

/** Stale processes first, the rest by PID. */
const byUrgency = (a: Judged, b: Judged) => Number(b.verdict.status === 'stale') - Number(a.verdict.status === 'stale') || a.entry.pid - b.entry.pid;

/** Every process running from the backends directory, Hangar's or not. Scans when opened and on demand. */
export function ProcessesView() {
  const [found, setFound] = useState<ScanEntry[] | null>(null);
  const scan = useAction(scanProcesses);
  const { run } = scan;
  // A LocalAI worker's machine has no Hangar to look at its processes' working directories.
  const noScan = useRefusal('scan');
  const rescan = useCallback(async () => {
    if (noScan) return;
    const entries = await run();
    if (entries) setFound(entries);
  }, [run, noScan]);
  const processes = useBackends((s) => s.processes);
  const entries = useMemo(() => {
    const supervised = Object.values(processes);
    const localai = new Set(supervised.filter((p) => p.runBy === 'localai').map((p) => p.pid));
    return found?.map((entry) => ({ entry, verdict: cwdVerdict(entry, supervised), byLocalAi: localai.has(entry.pid) })).sort(byUrgency) ?? null;
  }, [found, processes]);
  // A supervised process that starts or ends changes what runs from the backends directory: scan again.
  const livePids = useBackends((s) =>
    Object.values(s.processes)
      .filter((p) => !isEnded(p.state))
      .map((p) => p.pid)
      .sort((a, b) => a - b)
      .join(' '),
  );
  useEffect(() => {
    void rescan();
  }, [rescan, livePids]);
  const stale = entries?.filter((e) => e.verdict.status === 'stale') ?? [];
  // The sidebar counts the stale processes Hangar runs; a scan finds the user's own too, and says how many are theirs.
  const notOurs = stale.filter((e) => !e.entry.supervised).length;
  return (
    <section className="view" aria-labelledby="processes-title">
      <header className="view-header">
        <h1 id="processes-title">Processes</h1>
        {entries && (
          <span className="count" data-testid="processes-count">
            {entries.length} running from the backends directory
            {stale.length > 0 && `, ${stale.length} stale${notOurs > 0 ? ` (${notOurs} not started by Hangar)` : ''}`}
          </span>
        )}
        <span className="spacer" />
        <ActionButton className="btn" unavailable={noScan ?? (scan.pending ? 'Scanning…' : null)} onAct={() => void rescan()} data-testid="processes-scan">
          {scan.pending && <span className="spinner" aria-hidden="true" />}
          {scan.pending ? 'Scanning…' : 'Scan'}
        </ActionButton>
      </header>
      <SupervisedProcesses />
      {noScan && (
        <p className="muted" data-testid="processes-no-scan">
          {noScan}.
        </p>
      )}
      {entries !== null && <h2 className="section-title">Running from the backends directory</h2>}
      {scan.error && (
        <Alert testId="processes-error">
          Could not scan for processes: {scan.error}
        </Alert>
      )}
      {entries === null ? (
        scan.pending && <Loading what="processes" />
      ) : entries.length === 0 ? (
        <div className="empty" data-testid="processes-empty">
          <h2>No process runs from the backends directory.</h2>
          <p className="muted">Processes started in a backend's directory show up here, whoever started them.</p>
        </div>
      ) : (
        <div className="table-wrap">
          <table className="table" aria-label="Processes running from the backends directory" aria-busy={scan.pending}>
            <thead>
              <tr>
                <th scope="col" className="num sticky-start">PID</th>
                <th scope="col" className="state-col">Status</th>
                <th scope="col">Command</th>
                <th scope="col">Working directory</th>
                <th scope="col">Supervised</th>
                <th scope="col">Backend</th>
                <th scope="col" className="sticky-end">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {entries.map(({ entry, verdict, byLocalAi }) => (
                <ScanRow key={entry.pid} entry={entry} verdict={verdict} byLocalAi={byLocalAi} onStopped={rescan} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function ScanRow({ entry, verdict, byLocalAi, onStopped }: { entry: ScanEntry; verdict: CwdVerdict; byLocalAi: boolean; onStopped: () => Promise<void> }) {
  const stale = verdict.status === 'stale';
  const hint = entry.supervised ? SUPERVISED_HINT : byLocalAi ? LOCALAI_HINT : UNSUPERVISED_HINT;
  return (
    <tr className={stale ? 'row-stale' : undefined} data-testid={`scan-row-${entry.pid}`} data-status={verdict.status}>
      <td className="num mono sticky-start" data-testid="scan-pid">
        {entry.pid}
      </td>
      <td data-testid="scan-status">
        {stale ? (
          <StaleBadge process={{ cwdReason: verdict.reason, procCwd: entry.cwd || null }} hint={hint} />
        ) : (
          <span className="muted" title={verdict.reason}>
            {verdict.status}
          </span>
        )}
      </td>
      <td className="mono">
        {entry.command ? (
          <span className="truncate" title={entry.command}>
            {entry.command}
          </span>
        ) : (
          <span className="muted">(no command line)</span>
        )}
      </td>
      <td className="mono cell-path" data-testid="scan-cwd">
        {entry.cwd ? <PathText path={entry.cwd} /> : <span className="muted">(unreadable)</span>}
      </td>
      <td className="nowrap" data-testid="scan-supervised">{entry.supervised ? 'yes' : byLocalAi ? 'run by LocalAI' : 'not started by Hangar'}</td>
      <td data-testid="scan-backend">{entry.backend ?? <span className="muted">—</span>}</td>
      <td className="sticky-end">{stale && !entry.supervised && !byLocalAi && <StopProcess entry={entry} onStopped={onStopped} />}</td>
    </tr>
  );
}

/** Stops a stale process Hangar did not start, once the user confirms which one (PID and command line). */
function StopProcess({ entry, onStopped }: { entry: ScanEntry; onStopped: () => Promise<void> }) {
  const [confirming, setConfirming] = useState(false);
  const stop = useAction(async () => {
    await stopProcess(entry.pid);
    await onStopped();
  });
  return (
    <>
      <ActionButton className="btn small danger-text" unavailable={stop.pending ? 'Stopping…' : null} onAct={() => setConfirming(true)} data-testid="scan-stop">
        {stop.pending ? 'Stopping…' : 'Stop process'}
      </ActionButton>
      {stop.error && (
        <Alert inline>
          {stop.error}
        </Alert>
      )}
      <ConfirmDialog
        open={confirming}
        title={`Stop process ${entry.pid}?`}
        confirmLabel="Stop process"
        onConfirm={() => void stop.run()}
        onClose={() => setConfirming(false)}
      >
        Hangar did not start PID {entry.pid}: <code>{entry.command || '(no command line)'}</code>. It is sent SIGTERM, then
        SIGKILL if it has not exited after a few seconds.
      </ConfirmDialog>
    </>
  );
}

/** A path that wraps after a slash rather than inside a name. */
function PathText({ path }: { path: string }) {
  return path.split('/').map((part, i) => (
    <Fragment key={i}>
      {i > 0 && '/'}
      {i > 0 && <wbr />}
      {part}
    </Fragment>
  ));
}
