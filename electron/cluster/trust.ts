// A node's trust list: the viewer keys whose signed calls it acts on, one per line in <home>/state/cluster-trust
// ("KEY LABEL"), owner-only. `hangar cluster trust KEY` adds one; a running node sees the change at its next
// heartbeat, or at once when a call comes from a key it does not hold yet.
import { EventEmitter } from 'node:events';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../core/state-file.ts';
import { notAKey, parsePublicKey } from './node-key.ts';
import { HangarError } from '../../shared/errors.ts';

export const trustFile = (home: string) => join(home, 'state', 'cluster-trust');

export interface TrustEntry {
  key: string;
  id: string;
  label: string;
}

const LABEL = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

export async function readTrust(home: string): Promise<TrustEntry[]> {
  const text = await readFile(trustFile(home), 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return '';
    throw error;
  });
  const entries: TrustEntry[] = [];
  for (const line of text.split('\n')) {
    const [key = '', label = ''] = line.trim().split(/\s+/, 2);
    const parsed = parsePublicKey(key);
    if (parsed && !entries.some((e) => e.id === parsed.id)) entries.push({ key, id: parsed.id, label });
  }
  return entries;
}

/** Adds a viewer's key (or relabels it); returns the entry. */
export async function addTrust(home: string, key: string, label = ''): Promise<TrustEntry> {
  const parsed = parsePublicKey(key.trim());
  if (!parsed) throw new HangarError('bad-input', notAKey(key));
  if (label && !LABEL.test(label)) throw new HangarError('bad-input', 'a label may hold letters, digits, ".", "_", "@" and "-", at most 64 characters');
  const entry: TrustEntry = { key: parsed.text, id: parsed.id, label };
  await writeTrust(home, [...(await readTrust(home)).filter((e) => e.id !== parsed.id), entry]);
  return entry;
}

/** Removes a key, named by the key, its id or its label; returns what was removed. */
export async function removeTrust(home: string, which: string): Promise<TrustEntry[]> {
  const entries = await readTrust(home);
  const removed = entries.filter((e) => e.key === which || e.id === which || (e.label !== '' && e.label === which));
  if (removed.length === 0) throw new HangarError('not-found', `the trust list holds no key "${which.slice(0, 80)}" (hangar cluster trust lists it)`);
  await writeTrust(home, entries.filter((e) => !removed.includes(e)));
  return removed;
}

async function writeTrust(home: string, entries: TrustEntry[]): Promise<void> {
  await mkdir(join(home, 'state'), { recursive: true, mode: 0o700 });
  await writeFileAtomic(trustFile(home), entries.map((e) => `${e.key}${e.label ? ` ${e.label}` : ''}\n`).join(''), { mode: 0o600 });
}

/**
 * The trust list a running host checks calls and stored values against, kept in step with the file, and with the
 * viewers the cluster's admins granted (store/grants.ts) in a cluster joined by invitation.
 */
export class TrustList extends EventEmitter<{ change: [] }> {
  private fromFile = new Map<string, string>();
  private labels = new Map<string, string>();
  private granted = new Map<string, string>();
  private keys = new Map<string, string>();
  private texts = new Set<string>();
  private stamp = '';
  private reading: Promise<boolean> | null = null;

  constructor(private readonly home: string) {
    super();
  }

  /** Re-reads the file when it changed; true (and a `change` event) when the list did. Callers at once share one read. */
  refresh(): Promise<boolean> {
    this.reading ??= this.read().finally(() => (this.reading = null));
    return this.reading;
  }

  private async read(): Promise<boolean> {
    const info = await stat(trustFile(this.home)).catch(() => null);
    const stamp = info ? `${info.ino}:${info.size}:${info.mtimeMs}` : 'none';
    if (stamp === this.stamp) return false;
    this.stamp = stamp;
    const entries = await readTrust(this.home).catch(() => []);
    this.fromFile = new Map(entries.map((e) => [e.id, e.key]));
    this.labels = new Map(entries.filter((e) => e.label !== '').map((e) => [e.id, e.label]));
    return this.merge();
  }

  /** The keys the admins granted now (by id); a `change` event when the list changed. */
  setGranted(keys: Map<string, string>): boolean {
    this.granted = new Map(keys);
    return this.merge();
  }

  private merge(): boolean {
    const before = [...this.keys.keys()].sort().join();
    this.keys = new Map([...this.granted, ...this.fromFile]);
    this.texts = new Set(this.keys.values());
    const changed = before !== [...this.keys.keys()].sort().join();
    if (changed) this.emit('change');
    return changed;
  }

  /** Whether the list holds a key written this way, as last read (no parsing: for a look before any signature work). */
  hasText(text: string): boolean {
    return this.texts.has(text);
  }

  /** Whether the list holds the key whose id is `id` (a node's id is its key's), as last read. */
  hasId(id: string): boolean {
    return this.keys.has(id);
  }

  /** Whether the list holds this key now, as last read. */
  has(key: { id: string; text: string }): boolean {
    return this.keys.get(key.id) === key.text;
  }

  /** Whether the list holds this key; a key it does not hold sends it to the file first (a stat, and a read only when the file changed). */
  async holds(key: { id: string; text: string }): Promise<boolean> {
    if (this.has(key)) return true;
    await this.refresh();
    return this.has(key);
  }

  /** The label the file gives the key whose id is `id`, as last read; null when it gives none. */
  label(id: string): string | null {
    return this.labels.get(id) ?? null;
  }

  /** The ids of the keys it holds, as a node's card lists them. */
  ids(): string[] {
    return [...this.keys.keys()];
  }
}
