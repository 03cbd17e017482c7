// Which nodes a pin, a rollout or a command is about: `all`, `label:KEY=VALUE`, or `nodes:ID,ID`. Without zod, so
// the UI and the CLI match nodes the way the cluster does.

export const LABEL_KEY = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$/;
import { HangarError } from './errors.ts';
export const LABEL_VALUE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
export const LABEL_RULE = 'a label is KEY=VALUE: letters, digits, ".", "_" and "-" (and "/" in the key), at most 63 each';
/** A small cluster's tags; more would only grow every heartbeat. */
export const LABELS_MAX = 16;
const NODE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export type Selector = { kind: 'all' } | { kind: 'label'; key: string; value: string } | { kind: 'nodes'; ids: string[] };

/** Parses a selector; throws an Error that says what a selector looks like. */
export function parseSelector(text: string): Selector {
  if (text === 'all') return { kind: 'all' };
  if (text.startsWith('label:')) {
    const label = parseLabel(text.slice('label:'.length));
    return { kind: 'label', ...label };
  }
  if (text.startsWith('nodes:')) {
    const ids = text.slice('nodes:'.length).split(',');
    if (ids.length === 0 || ids.length > 256 || !ids.every((id) => NODE_ID.test(id))) throw new HangarError('bad-input', `"${text.slice(0, 80)}" names no node ids`);
    return { kind: 'nodes', ids: [...new Set(ids)] };
  }
  throw new HangarError('bad-input', `"${text.slice(0, 80)}" is not a selector: all, label:KEY=VALUE or nodes:ID,ID`);
}

export function isSelector(text: string): boolean {
  try {
    parseSelector(text);
    return true;
  } catch {
    return false;
  }
}

/** `KEY=VALUE`, checked. */
export function parseLabel(text: string): { key: string; value: string } {
  const at = text.indexOf('=');
  const key = at < 0 ? text : text.slice(0, at);
  const value = at < 0 ? '' : text.slice(at + 1);
  if (!LABEL_KEY.test(key) || !LABEL_VALUE.test(value)) throw new HangarError('bad-input', `"${text.slice(0, 80)}": ${LABEL_RULE}`);
  return { key, value };
}

/** Labels written `KEY=VALUE, …` (blanks around each ignored); throws on the first that is not one. */
export function parseLabels(text: string): Record<string, string> {
  return Object.fromEntries(text.split(',').map((t) => t.trim()).filter(Boolean).map(parseLabel).map((l) => [l.key, l.value]));
}

/** A selector as `--on` takes it: `all`, `label:KEY=VALUE`, or the node ids, comma-separated. */
export function selectorArgument(text: string): string {
  return text.startsWith('nodes:') ? text.slice('nodes:'.length) : text;
}

/** Whether a node (its id and labels) is one the selector names. */
export function selects(selector: Selector | string, node: { id: string; labels: Record<string, string> }): boolean {
  const s = typeof selector === 'string' ? parseSelector(selector) : selector;
  if (s.kind === 'all') return true;
  if (s.kind === 'label') return node.labels[s.key] === s.value;
  return s.ids.includes(node.id);
}

/** More nodes than this are counted, not named, where a selector is said in a line. */
const NAMED_MAX = 5;

/**
 * A selector as people read it: "every node", "nodes labelled gpu=nvidia", "node n2", "nodes n1, n2". Nodes are
 * named by `nameOf` (their names as the cluster knows them); an id it does not know is shown as it is.
 */
export function describeSelector(text: string, nameOf: (id: string) => string | undefined = () => undefined): string {
  const s = parseSelector(text);
  if (s.kind === 'all') return 'every node';
  if (s.kind === 'label') return `nodes labelled ${s.key}=${s.value}`;
  const names = s.ids.map((id) => nameOf(id) ?? id);
  return names.length === 1 ? `node ${names[0]}` : names.length <= NAMED_MAX ? `nodes ${names.join(', ')}` : `${names.length} nodes`;
}
