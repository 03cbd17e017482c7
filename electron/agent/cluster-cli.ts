// `hangar cluster …`: this home's key, the viewer keys its node trusts, a nats-server configuration for a whole
// cluster, and what the running host's cluster link dropped or was refused. Key and trust work on the home's files,
// with or without a running agent (a running one takes a new trust entry at its next heartbeat).
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { cliIo } from './cli-io.ts';
import { linkLostWords } from '../../shared/cluster-link.ts';
import type { ClusterStatusView } from '../../shared/types.ts';
import { refuseExisting } from '../cluster/config-out.ts';
import { clusterKeyFile, loadIdentity } from '../cluster/node-key.ts';
import { clusterMachines, listenAddress, natsConfig, startCommands, type NatsConfigInput } from '../cluster/nats-config.ts';
import { readJoined } from '../cluster/joined-home.ts';
import { addTrust, readTrust, removeTrust, trustFile } from '../cluster/trust.ts';
import { HangarError } from '../../shared/errors.ts';
import { table } from './format.ts';

export interface Printed {
  json: unknown;
  text: string;
}

export async function showKey(home: string): Promise<Printed> {
  const identity = await loadIdentity(home);
  const file = clusterKeyFile(home);
  return {
    json: { id: identity.id, key: identity.publicKey, file },
    text: `node id  ${identity.id}\nkey      ${identity.publicKey}\n(kept in ${file}; give the key to the nodes this host calls: hangar cluster trust KEY on each)\n`,
  };
}

export async function trust(home: string, key: string | undefined, label: string | undefined): Promise<Printed> {
  if (key === undefined) {
    const entries = await readTrust(home);
    return { json: entries, text: table(entries.map((e) => ({ id: e.id, label: e.label || '-', key: e.key })), `this node trusts no viewer key yet (${trustFile(home)})`) };
  }
  const entry = await addTrust(home, key, label);
  return { json: entry, text: `trusted ${entry.key} (id ${entry.id}${entry.label ? `, ${entry.label}` : ''}): this node acts on its signed calls from its next heartbeat\n` };
}

/**
 * An admin's key is refused unless `force`: untrusted, the node no longer takes that admin's own calls, pins and
 * rollouts, though it still takes the members the admin granted. Returns what was removed, and what follows.
 */
export async function untrust(home: string, which: string, force = false): Promise<Printed & { warning: string }> {
  const admins = (await readJoined(home))?.admins ?? [];
  const admin = (await readTrust(home)).find((e) => admins.includes(e.key) && (e.key === which || e.id === which || e.label === which));
  const follows = admin && `this node would refuse the calls, pins and rollouts of its cluster's admin (key ${admin.id}), who invited it; the members that admin granted stay trusted`;
  if (admin && !force) throw new HangarError('conflict', `${follows}: pass --force to untrust it anyway`);
  const removed = await removeTrust(home, which);
  const warning = follows ? `${follows.replace('would refuse', 'refuses')}, from its next heartbeat; hangar cluster trust ${admin!.key} --label admin takes it back` : '';
  return { json: removed, text: removed.map((e) => `no longer trusted: ${e.key} (id ${e.id}${e.label ? `, ${e.label}` : ''})\n`).join(''), warning };
}

export async function writeNatsConfig(input: NatsConfigInput & { out: string }): Promise<Printed> {
  const machines = clusterMachines(input);
  const out = resolve(input.out);
  const storeDir = resolve(input.storeDir);
  const { listen, note } = listenAddress(input.url, input.listen);
  await refuseExisting([out]);
  // Said before anything is written: the server would not listen where the printed commands join it.
  if (note) cliIo().stderr.write(`hangar: ${note}\n`);
  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, natsConfig(machines, { listen, storeDir }), { mode: 0o600 });
  const steps = startCommands(machines, input.url, dirname(out));
  const text = [
    `wrote ${out} (owner-only: it holds every password). Start the server with:`,
    `  nats-server -c ${out}`,
    '',
    ...steps.flatMap((s) => [`on ${s.machine}:`, ...s.commands.map((c) => `  ${c}`), '']),
  ];
  return { json: { config: out, listen, storeDir, machines: steps }, text: text.join('\n') };
}

/** What the cluster link dropped, refused or was refused, in a few lines (nothing when all is well). */
export function statusNotes(status: ClusterStatusView): string {
  const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);
  const reasons = (counts: Record<string, number>) => Object.entries(counts).map(([reason, n]) => `${n} ${reason}`).join(', ');
  const lines: string[] = [];
  for (const kind of ['cards', 'events', 'replies', 'records'] as const) {
    const counts = status.dropped[kind];
    if (sum(counts) > 0) lines.push(`dropped ${sum(counts)} ${kind} heard from the cluster (${reasons(counts)})`);
  }
  if (sum(status.refused) > 0) lines.push(`refused ${sum(status.refused)} calls (${reasons(status.refused)})`);
  if (sum(status.unsent) > 0) lines.push(`could not send ${sum(status.unsent)} messages (${reasons(status.unsent)})`);
  for (const bucket of ['desired', 'rollouts'] as const) {
    const count = status.untrusted.filter((r) => r.bucket === bucket).length;
    if (count > 0) lines.push(`not taken: ${count} ${bucket === 'desired' ? 'desired versions' : 'rollouts'} in the cluster's store signed by keys this host does not trust (${untrustedKeys(status, bucket)})`);
  }
  for (const v of status.violations) lines.push(`the NATS server refused this host: ${v.message}${v.count > 1 ? ` (${v.count} times, last ${v.last})` : ''}`);
  return lines.map((l) => `${l}\n`).join('');
}

function untrustedKeys(status: ClusterStatusView, bucket: 'desired' | 'rollouts'): string {
  const keys = [...new Set(status.untrusted.filter((r) => r.bucket === bucket).map((r) => r.by))];
  return `key${keys.length === 1 ? '' : 's'} ${keys.slice(0, 5).join(', ')}${keys.length > 5 ? ', …' : ''}`;
}

/** The records of one bucket this host does not take, one line each, beneath what it lists. */
export function untrustedLines(status: ClusterStatusView, bucket: 'desired' | 'rollouts'): string {
  const records = status.untrusted.filter((r) => r.bucket === bucket);
  if (records.length === 0) return '';
  const what = bucket === 'desired' ? 'desired version of' : 'rollout';
  return `\nnot taken (signed by a key this host does not trust; hangar cluster trust KEY takes its writer's):\n${records.map((r) => `  ${what} ${r.name}, signed by key ${r.by} at ${r.at}\n`).join('')}`;
}

export function statusText(status: ClusterStatusView): string {
  if (status.role === null) return 'this host is in no cluster\n';
  const head = [
    `role     ${status.role}`,
    `node id  ${status.id}`,
    `key      ${status.key}`,
    `trusts   ${status.openToAnyCaller ? 'any caller (--insecure-any-caller)' : `${status.trusted} viewer key${status.trusted === 1 ? '' : 's'}`}`,
    ...(status.link.connected ? [] : [`link     lost since ${status.link.since}: ${linkLostWords(status.link)}`]),
  ];
  return head.join('\n') + '\n' + (statusNotes(status) || 'nothing dropped, refused or refused to this host\n');
}
