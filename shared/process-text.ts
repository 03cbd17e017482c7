// How every viewer words a process's end and its cwd verdict, so the CLI and the UI say the same thing.
import { humanDuration } from './progress.ts';
import type { CwdStatus, ProcessExit, ProcessState, ProcessView, ScanEntry } from './types.ts';

/** A row's pid or port, or null where its node reports none (a row carries 0 there: a LocalAI worker reports no pid). */
export function reportedNumber(value: number): number | null {
  return value > 0 ? value : null;
}

/** A process state as viewers show it: `idle` is a process that runs and answers but holds no model. */
export type ShownState = ProcessState | 'idle';

/** `ready` only while the model is loaded: a process whose model was freed, or whose load failed, is `idle`. */
export function shownState(p: Pick<ProcessView, 'state' | 'loaded'>): ShownState {
  return p.state === 'ready' && !p.loaded ? 'idle' : p.state;
}

/** "killed by SIGKILL at 12:04:05": `time` formats the moment (the CLI prints ISO, the UI the local clock). */
export function endedText(exit: ProcessExit, time: (iso: string) => string): string {
  const how = exit.signal ? `killed by ${exit.signal}` : exit.code !== null ? `exit code ${exit.code}` : 'exit status unknown';
  return `${how} at ${time(exit.at)}`;
}

/** The process's last line of output, labelled as such: it is what it said last, not necessarily why it ended. */
export function lastOutputText(exit: ProcessExit): string | null {
  const last = exit.tail.at(-1);
  return last ? `last output: ${last}` : null;
}

/** "killed by SIGKILL at …; last output: …". */
export function exitNote(exit: ProcessExit, time: (iso: string) => string): string {
  return [endedText(exit, time), lastOutputText(exit)].filter(Boolean).join('; ');
}

/**
 * A row that starts or loads, with how long Hangar waits: "starting for 45s (longest start here 52s; gives up at
 * 14:03:10)". Null for any other row.
 */
export function startingNote(p: ProcessView, now: number, time: (iso: string) => string): string | null {
  if (!p.deadline || (p.state !== 'starting' && p.state !== 'loading')) return null;
  const longest = p.longestMs ? `longest ${p.state === 'loading' ? 'load' : 'start'} here ${humanDuration(p.longestMs)}; ` : '';
  const what = p.state === 'starting' ? `starting for ${humanDuration(now - Date.parse(p.startedAt))}` : 'loading the model';
  return `${what} (${longest}gives up at ${time(p.deadline)})`;
}

export interface CwdVerdict {
  status: CwdStatus;
  reason: string;
}

/**
 * One process, one verdict. A process Hangar supervises is judged by its supervisor, which knows the directory it
 * was started in (its identity at that path, and what /proc says); a process it did not start is judged by the scan.
 */
export function cwdVerdict(entry: ScanEntry, supervised: readonly ProcessView[]): CwdVerdict {
  // A process Hangar supervises, or one a linked LocalAI server runs: its row's verdict, with its reason.
  const own = supervised.find((p) => p.pid === entry.pid && (entry.supervised || p.runBy === 'localai'));
  if (own) return { status: own.cwd, reason: own.cwdReason };
  switch (entry.status) {
    case 'stale':
      return { status: 'stale', reason: entry.cwd.endsWith(' (deleted)') ? 'cwd was deleted' : 'cwd is not a live backend directory' };
    case 'ok':
      return { status: 'ok', reason: 'cwd is a live backend directory' };
    case 'unknown':
      return { status: 'unknown', reason: 'cwd cannot be read' };
  }
}
