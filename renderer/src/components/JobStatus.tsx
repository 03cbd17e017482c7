import { useRef } from 'react';
import { createRateMeter, movesBytes, progressText } from '../../../shared/progress.ts';
import type { JobView } from '../../../shared/types.ts';
import { cancelJob } from '../state/actions.ts';
import { isActive } from '../state/jobs.ts';
import { useAction } from './useAction.ts';

const VERB: Record<JobView['kind'], string> = { install: 'Installing', upgrade: 'Upgrading', rollback: 'Rolling back', delete: 'Deleting' };
const NOUN: Record<JobView['kind'], string> = { install: 'Install', upgrade: 'Upgrade', rollback: 'Rollback', delete: 'Delete' };

/** A running job's progress with Cancel, or the cause of a failed one. Finished jobs show nothing. */
export function JobStatus({ job }: { job: JobView }) {
  const cancel = useAction(cancelJob);
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
          <button type="button" className="btn small" onClick={() => void cancel.run(job.id)} disabled={cancel.pending}>
            Cancel
          </button>
        </div>
        <progress
          aria-label={`${VERB[job.kind]} ${job.backend}`}
          max={determinate ? job.totalBytes! : undefined}
          value={determinate ? job.bytes : undefined}
        />
        {cancel.error && <p className="alert error" role="alert">{cancel.error}</p>}
      </div>
    );
  }
  if (job.state === 'failed') {
    return (
      <p className="alert error" role="alert" data-testid="job-error">
        <strong>{NOUN[job.kind]} of {job.backend} failed:</strong> {job.error ?? 'no cause was reported'}
      </p>
    );
  }
  if (job.state === 'cancelled') {
    return <p className="alert muted" data-testid="job-cancelled">{NOUN[job.kind]} of {job.backend} was cancelled.</p>;
  }
  return null;
}
