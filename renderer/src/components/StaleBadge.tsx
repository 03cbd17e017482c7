import { useId } from 'react';
import type { ProcessView } from '../../../shared/types.ts';
import { useTopLayerTip } from './useTopLayerTip.ts';

/** What is known about a stale process: a supervised one also has the directory it was started in. */
type StaleEvidence = Pick<ProcessView, 'cwdReason' | 'procCwd'> & { dir?: string };

const RESPAWN_HINT = 'Respawn starts it again in the current directory.';

/** The red badge of a process whose working directory was replaced under it, with the evidence on hover or focus. */
export function StaleBadge({ process, hint = RESPAWN_HINT }: { process: StaleEvidence; hint?: string }) {
  const tipId = useId();
  const { anchorProps, tipProps } = useTopLayerTip<HTMLSpanElement, HTMLSpanElement>();
  return (
    <span className="tip-anchor" {...anchorProps}>
      <button type="button" className="badge danger" aria-describedby={tipId} data-testid="stale-badge">
        stale cwd
      </button>
      <span {...tipProps} role="tooltip" id={tipId} className="tooltip" data-testid="stale-tooltip">
        <span className="tooltip-title">{process.cwdReason || 'The directory this process runs in was replaced.'}</span>
        <dl>
          {process.dir !== undefined && (
            <>
              <dt>Recorded directory</dt>
              <dd>{process.dir || '(not recorded)'}</dd>
            </>
          )}
          <dt>/proc says</dt>
          <dd>{process.procCwd ?? 'unknown'}</dd>
        </dl>
        <span className="muted">{hint}</span>
      </span>
    </span>
  );
}
