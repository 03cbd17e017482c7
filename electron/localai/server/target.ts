// Which LocalAI a link may be made to: an http(s) address with no credentials in it, a key that can be sent as a
// header, and no key in clear over the network unless the user said so: the agent's --insecure, or the consent kept
// with that server's link (Settings → LocalAI server).
import { HangarError } from '../../../shared/errors.ts';
import { isLoopback } from '../../../shared/loopback.ts';
import { apiKeyProblem, parseLocalAiUrl } from '../http.ts';

export interface LocalAiTarget {
  url: string;
  apiKey: string | null;
  /** LocalAI's own pid, when whoever started it knows it: then only its children count as its processes. */
  pid: number | null;
  /** The user allowed this one over plain http:// from another machine. */
  insecure?: boolean;
}

/** Refuses a target Hangar must not link, in words for Settings and the command line (never holding the key). */
export function checkTarget(target: LocalAiTarget, insecure: boolean): void {
  let url: URL;
  try {
    url = parseLocalAiUrl(target.url, 'LocalAI server');
  } catch (error) {
    throw new HangarError('bad-input', (error as Error).message);
  }
  const keyProblem = target.apiKey ? apiKeyProblem(target.apiKey) : null;
  if (keyProblem) throw new HangarError('bad-input', keyProblem);
  if (url.protocol === 'http:' && !isLoopback(url.hostname) && !insecure && target.insecure !== true) {
    throw new HangarError('bad-input', `${url.origin} is plain http:// on another machine: its API key and Hangar's calls would cross the network in clear; use https://, or allow it (Settings → LocalAI server → "Allow plain http://", or the agent's --insecure)`);
  }
}
