// A node's reply is held to what its method returns (shared/result-schema.ts), but one text over its length limit
// (a note naming thousands of backends) must not cost the whole reply: each such text is cut to its limit, and the
// cut says so. Any other mismatch still refuses the reply.
import type * as z from 'zod';

/** What ends a cut text: how long it was. */
function cutMark(length: number): string {
  return ` … [cut by this host: ${length.toLocaleString('en-US')} characters]`;
}

/**
 * `value` with every string `issues` finds over its maximum length cut to fit, saying so (`value` is changed in
 * place); null when any issue is something else.
 */
export function cutOverlongTexts(value: unknown, issues: readonly z.core.$ZodIssue[]): unknown {
  const cuts = issues.map((issue) => (issue.code === 'too_big' && issue.origin === 'string' ? { path: issue.path, maximum: Number(issue.maximum) } : null));
  if (cuts.some((cut) => cut === null)) return null;
  for (const cut of cuts) {
    const key = cut!.path.at(-1);
    let parent: unknown = value;
    for (const step of cut!.path.slice(0, -1)) parent = (parent as Record<PropertyKey, unknown> | null)?.[step];
    const text = key === undefined || parent === null || typeof parent !== 'object' ? undefined : (parent as Record<PropertyKey, unknown>)[key];
    if (typeof text !== 'string') return null;
    const mark = cutMark(text.length);
    (parent as Record<PropertyKey, unknown>)[key!] = text.slice(0, Math.max(0, cut!.maximum - mark.length)) + mark;
  }
  return value;
}
