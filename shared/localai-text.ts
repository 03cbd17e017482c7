// Words about LocalAI run by Hangar that the CLI and the desktop app both say.
import type { LocalAiCancel } from './types.ts';

/** A cancel that came once the swap had begun: the operation goes on. */
export function pastCancelText(answer: LocalAiCancel): string {
  return `the LocalAI ${answer.kind} is past the point where it can be cancelled (${answer.phase}); it goes on`;
}
