// Settings → LocalAI: LocalAI run by Hangar. Install it (its sha256 checked), start, stop and restart it, upgrade it
// as a gated swap or roll it back, and read its logs; when it runs it is the LocalAI server linked below. While the
// agent cannot be reached, LocalAI's state is unknown: what was read before may have changed since.
import { useEffect, useState, type ReactNode } from 'react';
import type { LocalAiRunView } from '../../../shared/types.ts';
import { hideLocalAiLogs, loadLocalAiLogs, loadLocalAiRun, upgradeMarkedBackends, useLocalAiRun } from '../state/localai-run.ts';
import { ActionButton } from './ActionButton.tsx';
import { RunActions } from './LocalAiRunActions.tsx';
import { unknownSince, useLostSince } from '../state/connection.ts';
import { useAction } from './useAction.ts';
import { Alert } from './Message.tsx';
import { clockTime } from '../format.ts';

const POLL_MS = 1000;

export function LocalAiRunSection({ autostart }: { autostart: ReactNode }) {
  const view = useLocalAiRun((s) => s.view);
  const load = useAction(loadLocalAiRun);
  useEffect(() => {
    void load.run();
    const timer = setInterval(() => void loadLocalAiRun().catch(() => undefined), POLL_MS);
    return () => clearInterval(timer);
  }, [load.run]);
  if (!view) return load.error ? <Alert>Could not read LocalAI: {load.error}</Alert> : null;
  return (
    <section className="card settings-section" aria-label="LocalAI" data-testid="localai-run-settings">
      <h2>LocalAI</h2>
      <p className="muted">
        Hangar installs LocalAI&apos;s release binary (its sha256 always checked), runs <code>local-ai run</code> on this node&apos;s backends directory,
        restarts it after a crash, and links it as the server below. An upgrade stops it, swaps the binary, starts it and loads its models again; if
        any step fails, the previous build runs again.
      </p>
      <RunState view={view} />
      <RunActions view={view} />
      <MarkedBackends view={view} />
      {autostart}
      <LastOperation view={view} />
      <FailedStart view={view} />
      <Logs />
    </section>
  );
}

function RunState({ view }: { view: LocalAiRunView }) {
  const lostAt = useLostSince(useLocalAiRun((s) => s.readAt));
  if (lostAt !== null) return <p data-testid="localai-run-state">LocalAI {view.version ?? ''}: state {unknownSince(lostAt)}.</p>;
  const where = view.url ? ` at ${view.url}` : '';
  const pid = view.pid !== null ? ` (pid ${view.pid})` : '';
  const text = view.state === 'not-installed' ? 'LocalAI is not installed.' : `LocalAI ${view.version ?? ''}: ${view.state}${pid}${where}.`;
  return (
    <>
      <p data-testid="localai-run-state">{text}</p>
      {view.link && <p className="muted">{view.link}</p>}
      {view.lastExit && (
        <p className="muted" data-testid="localai-run-exit">
          Last ended by itself: {view.lastExit}; restarted {view.restarts} {view.restarts === 1 ? 'time' : 'times'}.
        </p>
      )}
    </>
  );
}

/** The backends LocalAI's gallery marked once its version changed: a stale build fails its models' loads. */
function MarkedBackends({ view }: { view: LocalAiRunView }) {
  const upgrade = useAction(upgradeMarkedBackends);
  const [failed, setFailed] = useState<string | null>(null);
  const problem = upgrade.error ?? failed;
  if (view.marked.length === 0 && !problem) return null;
  return (
    <div className="alert" role="status" data-testid="localai-marked">
      {view.marked.length > 0 && (
        <>
          <p>LocalAI&apos;s gallery marks these backends for upgrade since LocalAI {view.marked[0]!.since}; a model on a stale build may fail to load:</p>
          <ul>
            {view.marked.map((m) => (
              <li key={m.name}>
                {m.name} ({m.why})
              </li>
            ))}
          </ul>
          <ActionButton
            className="btn small primary"
            unavailable={upgrade.pending ? 'Upgrading…' : null}
            onAct={() => void upgrade.run().then((said) => setFailed(said ?? null))}
            data-testid="localai-upgrade-marked"
          >
            {upgrade.pending ? 'Upgrading…' : 'Upgrade all'}
          </ActionButton>
        </>
      )}
      {problem && <Alert>{problem}</Alert>}
    </div>
  );
}

function LastOperation({ view }: { view: LocalAiRunView }) {
  const op = view.operation;
  if (!op || op.state === 'running') return null;
  return <Outcome failed={op.state === 'failed'} text={`Last ${op.kind}: ${op.message}`} lines={op.logTail} testId="localai-run-operation" />;
}

/** A start that did not get to ready, after the last operation (whose own failed start that operation says). */
function FailedStart({ view }: { view: LocalAiRunView }) {
  const start = view.failedStart;
  const op = view.operation;
  if (!start || view.pid !== null || (op && (op.finishedAt === null || op.finishedAt > start.at))) return null;
  return <Outcome failed text={`Last start, at ${clockTime(start.at)}: ${start.why}`} lines={start.logTail} testId="localai-run-failed-start" />;
}

/** What LocalAI ended with, and the lines it wrote when it failed. */
function Outcome({ failed, text, lines, testId }: { failed: boolean; text: string; lines: string[]; testId: string }) {
  return (
    <div className={failed ? 'alert error' : 'muted'} data-testid={testId}>
      <p>{text}</p>
      {lines.length > 0 && (
        <pre className="log-lines" tabIndex={0} aria-label="LocalAI's last log lines">
          {lines.join('\n')}
        </pre>
      )}
    </div>
  );
}

function Logs() {
  const logs = useLocalAiRun((s) => s.logs);
  const show = useAction(loadLocalAiLogs);
  return (
    <div>
      {/* Hiding them asks nothing of the agent: only Show is off while it cannot be reached. */}
      {logs === null ? (
        <ActionButton className="btn small" unavailable={show.pending ? 'Reading the logs…' : null} onAct={() => void show.run()} data-testid="localai-logs-toggle">
          Show logs
        </ActionButton>
      ) : (
        <button type="button" className="btn small" onClick={hideLocalAiLogs} data-testid="localai-logs-toggle">
          Hide logs
        </button>
      )}
      {logs !== null && (
        <pre className="log-lines" tabIndex={0} aria-label="LocalAI's log lines" data-testid="localai-logs">
          {logs.length > 0 ? logs.join('\n') : 'No log lines yet.'}
        </pre>
      )}
    </div>
  );
}
