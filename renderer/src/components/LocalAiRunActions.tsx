// Settings → LocalAI's buttons. Each stays in place when it cannot act and says why; Stop and Restart act during a
// start (a first start may take minutes), and an install, upgrade or rollback can be cancelled until its swap begins.
// One message at a time, the last action's: what an install, upgrade or rollback ended with is the panel's last
// operation, and a failed start the panel's failed start, not said a second time here. A release Hangar refused is not
// offered again as the upgrade: it is said refused, and installed only when the user asks to try it again.
import { useCallback, useRef, useState } from 'react';
import { messageOf } from '../../../shared/error-text.ts';
import type { LocalAiRefusal, LocalAiRunView } from '../../../shared/types.ts';
import { cancelLocalAi, checkLatestLocalAi, controlLocalAi, installLocalAi, localaiRunStore, rollbackLocalAi, upgradeOffer, useLocalAiRun } from '../state/localai-run.ts';
import { useLostSince } from '../state/connection.ts';
import { ActionButton } from './ActionButton.tsx';
import { Message } from './Message.tsx';
import { clockTime } from '../format.ts';

type Act = 'start' | 'stop' | 'restart' | 'install' | 'rollback' | 'check' | 'cancel';

function useActs() {
  const [pending, setPending] = useState<Act | null>(null);
  const [error, setError] = useState<string | null>(null);
  const last = useRef(0);
  const act = useCallback(async (name: Act, work: () => Promise<void>) => {
    const mine = ++last.current;
    const { view: before } = localaiRunStore.getState();
    setPending(name);
    setError(null);
    try {
      await work();
    } catch (caught) {
      const after = localaiRunStore.getState().view;
      const operation = after?.operation;
      const operationTold = operation && operation.startedAt !== before?.operation?.startedAt && operation.state !== 'running';
      const told = operationTold || (after?.failedStart && after.failedStart.at !== before?.failedStart?.at);
      // A start cancelled by the Stop clicked after it is no failure: a later action's outcome is the one to say.
      if (last.current === mine && !told) setError(messageOf(caught));
    } finally {
      if (last.current === mine) setPending(null);
    }
  }, []);
  return { pending, error, clearError: () => setError(null), act };
}

export function RunActions({ view }: { view: LocalAiRunView }) {
  const latest = useLocalAiRun((s) => s.latest);
  const { pending, error, clearError, act } = useActs();
  const operation = view.operation?.state === 'running' ? view.operation : null;
  const busy = operation ? `A LocalAI ${operation.kind} is under way (${operation.phase})` : view.state === 'stopping' ? 'LocalAI is stopping' : null;
  const own = (name: Act, text: string) => (pending === name ? text : null);
  const change = busy ?? (view.state === 'starting' ? 'LocalAI is starting: stop it, or wait until it is ready' : null);
  const running = view.pid !== null;
  const installed = view.state !== 'not-installed';
  // While a check runs, the release it last found is not offered: the newer one it may find would be the one meant.
  const { offered, refused } = upgradeOffer(view, latest);
  const button = (label: string, testId: string, unavailable: string | null, onAct: () => void, primary = false) => (
    <ActionButton className={`btn small${primary ? ' primary' : ''}`} unavailable={unavailable} onAct={onAct} data-testid={testId}>
      {label}
    </ActionButton>
  );
  // A phase read before the agent was lost is none to say now.
  const lost = useLostSince(useLocalAiRun((s) => s.readAt)) !== null;
  const status = pending === 'check' ? 'checking…' : lost ? null : operation ? operation.phase : view.state === 'starting' || view.state === 'stopping' ? `${view.state}…` : null;
  return (
    <>
      <div className="setting-row" role="group" aria-label="LocalAI actions">
        {!installed && !view.fixedBinary && button('Install LocalAI', 'localai-install', busy ?? own('install', 'Installing…'), () => void act('install', () => installLocalAi()), true)}
        {installed && !running && button('Start', 'localai-start', busy ?? own('start', 'Starting…'), () => void act('start', () => controlLocalAi('start')), true)}
        {running && button('Stop', 'localai-stop', busy ?? own('stop', 'Stopping…'), () => void act('stop', () => controlLocalAi('stop')))}
        {running && button('Restart', 'localai-restart', busy ?? own('restart', 'Restarting…'), () => void act('restart', () => controlLocalAi('restart')))}
        {installed && !view.fixedBinary && button('Check for a newer LocalAI', 'localai-check', own('check', 'Checking…'), () => void act('check', checkLatestLocalAi))}
        {offered &&
          button(`Upgrade to ${offered}`, 'localai-upgrade', change ?? own('check', 'Checking for a newer LocalAI…'), () => void act('install', () => installLocalAi(offered)), true)}
        {refused && button(`Try ${refused.version} again`, 'localai-retry', change ?? own('check', 'Checking for a newer LocalAI…'), () => void act('install', () => installLocalAi(refused.version)))}
        {view.previousVersion && button(`Roll back to ${view.previousVersion}`, 'localai-rollback', change, () => void act('rollback', rollbackLocalAi))}
        {operation &&
          button(
            `Cancel the ${operation.kind}`,
            'localai-cancel',
            operation.cancellable ? own('cancel', 'Cancelling…') : 'Its swap has begun: it can no longer be cancelled, and goes on',
            () => void act('cancel', cancelLocalAi),
          )}
        {installed && latest && !offered && latest === view.version && <span className="muted">{latest} is the latest release.</span>}
        {status && <span className="muted">{status}</span>}
      </div>
      {refused && <RefusedOffer refused={refused} view={view} />}
      {error && (
        <Message kind="error" boxed onDismiss={clearError} testId="localai-run-error">
          {error}
        </Message>
      )}
    </>
  );
}

/** Why the latest release is not offered; why it was refused only when the last operation does not say it already. */
function RefusedOffer({ refused, view }: { refused: LocalAiRefusal; view: LocalAiRunView }) {
  const last = view.operation;
  const saidBelow = last?.state === 'failed' && last.startedAt <= refused.at;
  return (
    <p className="muted" data-testid="localai-refused">
      Not offered again: {refused.version}, the latest release, was refused at {clockTime(refused.at)}
      {saidBelow ? ', as said below.' : `: ${refused.reason}.`}
    </p>
  );
}
