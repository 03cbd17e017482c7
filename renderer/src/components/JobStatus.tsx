import { useRef } from 'react';
import { createRateMeter, movesBytes, progressText } from '../../../shared/progress.ts';
import type { JobView } from '../../../shared/types.ts';
import { cancelJob } from '../state/actions.ts';
import { useRefusal } from '../state/node.ts';
import { dismissJob, isActive, useDismissed } from '../state/jobs.ts';
import { ActionButton } from './ActionButton.tsx';
import { Message } from './Message.tsx';
import { useAction } from './useAction.ts';

const VERB: Record<JobView['kind'], string> = { install: 'Installing', upgrade: 'Upgrading', rollback: 'Rolling back', delete: 'Deleting' };
const NOUN: Record<JobView['kind'], string> = { install: 'Install', upgrade: 'Upgrade', rollback: 'Rollback', delete: 'Delete' };

/** A running job's progress with Cancel, or the cause of a failed one. A finished job shows only its notice. */
export function JobStatus({ job }: { job: JobView }) {
  const cancel = useAction(cancelJob);
  const noCancel = useRefusal('cancelJob');
  const dismissed = useDismissed(job.id);
  const meter = useRef({ id: job.id, rate: createRateMeter() });
  if (meter.current.id !== job.id) meter.current = { id: job.id, rate: createRateMeter() };
  if (isActive(job)) {
    const figures = progressText(job, movesBytes(job) ? meter.current.rate.sample(job.bytes, Date.now()) : null);
    const determinate = figures !== null && job.totalBytes !== null && job.totalBytes > 0;
    return (
      <div className="job" data-testid="job-progress" data-job-state={job.state}>
        <div className="job-line">
          <span className="job-phase">
            {VERB[job.kind]} {job.backend}
            <span className="muted" data-testid="job-phase"> · {job.state === 'queued' ? 'queued' : job.phase}</span>
          </span>
          {figures && (
            <span className="job-bytes" data-testid="job-bytes">
              {figures}
            </span>
          )}
          <ActionButton className="btn small" unavailable={noCancel ?? (cancel.pending ? 'Cancelling…' : null)} onAct={() => void cancel.run(job.id)}>
            Cancel
          </ActionButton>
        </div>
        <progress
          aria-label={`${VERB[job.kind]} ${job.backend}`}
          max={determinate ? job.totalBytes! : undefined}
          value={determinate ? job.bytes : undefined}
        />
        {cancel.error && (
          <Message kind="error" boxed onDismiss={cancel.clearError}>
            {cancel.error}
          </Message>
        )}
      </div>
    );
  }
  if (dismissed) return null;
  if (job.state === 'failed') {
    return (
      <Message kind="error" boxed testId="job-error" onDismiss={() => dismissJob(job.id)}>
        <strong>{NOUN[job.kind]} of {job.backend} failed:</strong> {job.error ?? 'no cause was reported'}
      </Message>
    );
  }
  if (job.state === 'cancelled') {
    return (
      <Message kind="muted" boxed testId="job-cancelled" onDismiss={() => dismissJob(job.id)}>
        {NOUN[job.kind]} of {job.backend} was cancelled.
      </Message>
    );
  }
  if (job.notice) {
    return (
      <p className="alert muted" role="status" data-testid="job-notice">
        <strong>{NOUN[job.kind]} of {job.backend}:</strong> {job.notice}
      </p>
    );
  }
  return null;
}
