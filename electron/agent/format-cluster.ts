// What the CLI prints about the cluster as a whole: its nodes, its rollouts and its desired versions.
import { describeSelector, selects } from '../../shared/selector.ts';
import type { ClusterStatusView, DesiredStateView, DesiredVersion, LocalAiWorkerView, NodeAccess, NodeCard, RolloutView } from '../../shared/types.ts';
import { nodeStatusText, resourceCells, table, uptime } from './format.ts';
import { named } from './nodes.ts';

/** Whether this host may act on a node, as `hangar nodes` says it. */
const ACCESS_WORDS: Record<NodeAccess, string> = { self: 'this host', trusted: 'trusted', open: 'open to any caller', 'not-trusted': 'not trusted by this node', revoked: 'revoked' };

/** `selfNote`: what to say on this host's own row (what the NATS server refused it). */
export function nodesTable(cards: NodeCard[], selfNote = ''): string {
  const names = new Map<string, number>();
  for (const c of cards) names.set(c.name, (names.get(c.name) ?? 0) + 1);
  return table(cards.map((c) => ({
    name: c.self ? `${c.name} (this host)` : c.kind === 'localai-worker' ? `${c.name} (LocalAI worker)` : c.name,
    id: c.id,
    status: nodeStatusText(c),
    access: ACCESS_WORDS[c.access],
    labels: Object.entries(c.labels).map(([k, v]) => `${k}=${v}`).join(',') || '-',
    host: c.host,
    os: c.platform ? `${c.platform}/${c.arch}` : '-',
    capability: c.capability,
    version: c.version || '-',
    backends: c.counts.backends,
    processes: c.counts.processes,
    stale: c.counts.stale,
    upgradable: c.counts.upgradable,
    drift: c.counts.drift,
    ...(c.localai ? { ...resourceCells(null), gpu: workerGpuText(c.localai) } : resourceCells(c.resources)),
    seen: c.status === 'online' ? 'now' : `${uptime(c.lastSeen)} ago`,
    note: [c.cordoned && 'cordoned', c.viewerOnly && 'viewer only: never in --on all, a pin or a rollout', (names.get(c.name) ?? 0) > 1 && sharedNameNote(c, cards), c.self && selfNote, pairingNote(c, cards)].filter(Boolean).join('; '),
  })), 'no nodes');
}

function sharedNameNote(card: NodeCard, cards: NodeCard[]): string {
  const meant = named(cards, card.name);
  if (meant.length !== 1) return 'name shared: tell apart by id';
  return meant[0] === card ? `name shared: --on ${card.name} means this one` : `name shared: --on ${card.name} means ${meant[0]!.id}`;
}

/** A LocalAI worker's GPU as its frontend reports it: the vendor, VRAM used of its total. */
function workerGpuText(worker: LocalAiWorkerView): string {
  if (!worker.gpuVendor && worker.totalVramBytes === 0) return '-';
  const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)}G`;
  return `${worker.gpuVendor ?? 'GPU'} ${gib(worker.totalVramBytes - worker.availableVramBytes)}/${gib(worker.totalVramBytes)}`;
}

/** A worker and a Hangar node on one machine and backends directory are one machine: each names the other. */
function pairingNote(card: NodeCard, cards: NodeCard[]): string {
  const other = card.localai?.pairedWith ?? card.pairedWorker;
  if (!other) return '';
  const name = cards.find((c) => c.id === other)?.name ?? other;
  return card.kind === 'localai-worker' ? `same machine and backends as ${name}: Hangar's actions apply there` : `also LocalAI worker ${name}`;
}

/** A node's name as the cards know it, for a selector or a line that holds its id. */
export function namesOf(cards: readonly NodeCard[]): (id: string) => string | undefined {
  return (id) => cards.find((c) => c.id === id)?.name;
}

/** "echo 2.0.0 is the desired version on node n2": the nodes a pin selected, by name. */
export function pinSentence(pin: DesiredVersion, cards: readonly NodeCard[]): string {
  return `${pin.backend} ${pin.version} is the desired version on ${describeSelector(pin.on, namesOf(cards))}`;
}

/** What a pin on other nodes took the place of: the nodes only the one before covered are no longer held to it. */
export function replacedLine(before: DesiredVersion | undefined, pin: DesiredVersion, cards: readonly NodeCard[]): string {
  if (!before || before.on === pin.on) return '';
  return `it replaces ${before.backend} ${before.version} on ${describeSelector(before.on, namesOf(cards))}: a backend has one desired version at a time\n`;
}

/** `cards`: the nodes as this host knows them now, to name the nodes a rollout of some of them selected. */
export function rolloutTable(r: RolloutView, cards: readonly NodeCard[] = []): string {
  const target = `${r.backend}${r.version ? ` → ${r.version}` : ''} on ${describeSelector(r.on, namesOf(cards))}`;
  const head = `rollout ${r.id}: ${target}, ${r.state}, started ${r.startedAt}, run by ${r.coordinator.name}${r.maxParallel > 1 ? `, ${r.maxParallel} at a time` : ''}\n`;
  const interrupted = r.interrupted ? `interrupted while ${r.interrupted.while}: ${r.interrupted.reason} (hangar resume --rollout ${r.id}, or hangar rollback --rollout ${r.id})\n` : '';
  return head + interrupted + table(r.nodes.map((n) => ({
    node: n.name, id: n.id, result: n.step, from: n.from, to: n.to, reason: n.reason ?? '',
  })), 'no nodes');
}

/**
 * `hangar desired`: each desired version, where it applies, and each node that is not there yet and why: what a node
 * said of itself, and a node that is away and was last seen running something else (or said nothing of it).
 */
export function desiredTable(view: DesiredStateView, cards: NodeCard[]): string {
  if (!view.available) return `the cluster keeps no desired versions: ${view.reason}\n`;
  const nameOf = (id: string) => namesOf(cards)(id) ?? id;
  const pins = table(view.desired.map((d) => ({
    backend: d.backend, version: d.version, on: describeSelector(d.on, namesOf(cards)), kind: d.rollout ? `rollout ${d.rollout}` : 'pin', by: d.byName ?? d.by, at: d.at,
  })), 'no desired versions (hangar pin NAME VERSION --on NODES records one)');
  const away = new Map(cards.filter((c) => c.status === 'offline').map((c) => [c.id, c]));
  const behind = view.nodes.filter((n) => n.state !== 'converged');
  const said = behind.map((n) => {
    const card = away.get(n.node);
    const row = { node: nameOf(n.node), id: n.node, backend: n.backend, wanted: n.wanted, runs: n.version };
    if (card?.access === 'revoked') return { ...row, state: 'revoked', reason: neverBack(card) };
    return { ...row, state: n.state, reason: [n.reason, card && nodeStatusText(card)].filter(Boolean).join('; ') };
  });
  const unsaid = view.desired.flatMap((d) => [...away.values()]
    .filter((c) => !c.viewerOnly && selects(d.on, c))
    .flatMap((c) => {
      const last = view.nodes.find((n) => n.node === c.id && n.backend === d.backend);
      // Listed already, there already, or (a rollout's version) without the backend it would move.
      if (last && (last.state !== 'converged' || last.version === d.version || (last.version === null && !d.installMissing))) return [];
      const row = { node: c.name, id: c.id, backend: d.backend, wanted: d.version, runs: last ? last.version : '?' };
      return c.access === 'revoked' ? { ...row, state: 'revoked', reason: neverBack(c) } : { ...row, state: 'not there yet', reason: `${nodeStatusText(c)}: it converges when it is back` };
    }));
  const rows = [...said, ...unsaid];
  return pins + (rows.length === 0 ? '' : '\n' + table(rows, ''));
}

/** A revoked node is not on its way back: the server refuses its credential. */
function neverBack(card: NodeCard): string {
  return `${nodeStatusText(card)}: it cannot come back with its credential, so it does not converge`;
}

/** Over what the cluster's store holds, while the link is down: what is shown is what this host last read. */
export function staleStoreNote(status: ClusterStatusView): string {
  if (status.role === null || status.link.connected) return '';
  return `cluster connection lost since ${status.link.since} (${status.link.reason ?? 'no broker'}): shown as this host last read it\n`;
}
