// How a request that fails its schema is answered: one sentence about the field, as people read it ("max restarts
// must be at least 1", never zod's "Too small: expected number to be >=1"), with the code its kind of failure has.
import type * as z from 'zod';
import type { ErrorEnvelope } from '../../shared/types.ts';

type Issue = z.core.$ZodIssue;

const KINDS: Record<string, string> = { int: 'a whole number', number: 'a number', string: 'text', boolean: 'true or false', object: 'an object', array: 'a list' };

export function issueEnvelope(issue: Issue | undefined): ErrorEnvelope {
  if (!issue) return { code: 'invalid-request', message: 'invalid request' };
  // A typed name that breaks its rule says so in the schema (shared/schemas.ts, typedName).
  const code = issue.code === 'custom' && issue.params?.code === 'bad-input' ? 'bad-input' : 'invalid-request';
  return { code, message: issueText(issue) };
}

/** zod's own words ("Too small: expected number to be >=1"): a schema that gave none of its own. */
const ZOD_WORDS = /^(Too (small|big)|Invalid (input|option)|Unrecognized key)/;

function issueText(issue: Issue): string {
  const field = fieldWords(issue.path);
  if (!ZOD_WORDS.test(issue.message)) return ownSubject(issue.message, field) ? issue.message : `${field}: ${issue.message}`;
  switch (issue.code) {
    case 'too_small':
      return `${field} must be ${bound(issue.origin, issue.inclusive ? 'at least' : 'more than', issue.minimum)}`;
    case 'too_big':
      return `${field} must be ${bound(issue.origin, issue.inclusive ? 'at most' : 'less than', issue.maximum)}`;
    case 'invalid_value':
      return `${field} must be ${issue.values.length === 1 ? '' : 'one of '}${issue.values.map(String).join(', ')}`;
    case 'invalid_type':
      return `${field} must be ${KINDS[issue.expected] ?? issue.expected}`;
    case 'unrecognized_keys':
      return `${field} takes no ${issue.keys.join(', ')}`;
    default:
      return `${field}: ${issue.message}`;
  }
}

function bound(origin: string, relation: string, limit: number | bigint): string {
  const unit = origin === 'string' ? ' characters' : origin === 'array' || origin === 'set' ? ' items' : '';
  return `${relation} ${limit}${unit}`;
}

/** `maxRestarts` → "max restarts"; a list's place is not a field of its own (`portRange.0` → "port range"). */
function fieldWords(path: readonly PropertyKey[]): string {
  const key = path.findLast((part) => typeof part === 'string');
  return key === undefined ? 'the request' : key.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();
}

/**
 * A message written as a sentence ("Model names can use…") or about the field by name ("name may hold only…") names
 * its own subject; another (a pattern's "bad node id") gets its field.
 */
function ownSubject(message: string, field: string): boolean {
  return /^[A-Z]/.test(message) || message.startsWith(`${field} `);
}
