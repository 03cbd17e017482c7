// What an action is about to do, worded from the state the UI already holds, for the confirmation it asks first.
import type { LeftoverAction } from '../../../shared/api.ts';
import { iecBytes } from '../../../shared/progress.ts';
import { isConvergedLater, rollbackNodes } from '../../../shared/rollback-nodes.ts';
import type { BackendView, NodeConvergence, RolloutView } from '../../../shared/types.ts';
import { offeredVersion } from '../../../shared/version-order.ts';
import type { BackendAction } from './actions.ts';
import type { BackendInfo, BackendsState } from './backends.ts';

export interface Impact {
  title: string;
  confirmLabel: string;
  /** Disruptive actions that cannot be undone are shown as dangerous. */
  danger: boolean;
  /** One sentence each: what happens to the backend, its processes, and its rollback target (or, across the cluster, to each node). */
  lines: string[];
  /** For an action across nodes: in what order they go, and what a failure does to the rest. */
  rule?: string;
}

type Confirmed = Exclude<BackendAction, 'install'>;

const version = (v: string | null | undefined) => v ?? 'unversioned';

/** Besides the backend's processes: those of them that run from a replaced directory, and the metas that go with it. */
export interface AlsoTouched {
  /** Models whose process runs from a directory replaced outside Hangar: a swap starts them again from its new tree too. */
  stale?: readonly string[];
  /** Meta backends that point at this build: deleted with it, as LocalAI does. */
  metas?: readonly string[];
}

/** What the UI knows of `name` beyond its own row: its stale processes and the metas that point at it. */
export function alsoTouched(state: BackendsState, name: string): AlsoTouched {
  const stale = (state.modelsByBackend[name] ?? []).filter((model) => state.processes[model]?.cwd === 'stale');
  const metas = state.names.filter((other) => state.byName[other]?.metaBackendFor === name);
  return { stale, metas };
}

/** "m2 runs from a directory replaced outside Hangar: …", or null. */
function staleText(stale: readonly string[]): string | null {
  if (stale.length === 0) return null;
  const one = stale.length === 1;
  return `${stale.join(', ')} ${one ? 'runs' : 'run'} from a directory replaced outside Hangar, and ${one ? 'starts' : 'start'} again from the tree swapped in.`;
}

export function processesText(verb: string, models: readonly string[]): string {
  if (models.length === 0) return `No process is running, so nothing is ${verb === 'restart' ? 'restarted' : 'stopped'}.`;
  const noun = models.length === 1 ? 'process' : 'processes';
  return `Will ${verb} ${models.length} ${noun} (${models.join(', ')}).`;
}

/** `onWorker`: the backend is on a LocalAI worker, which is told what to do over its own protocol. */
export function impactOf(action: Confirmed, backend: BackendInfo, models: readonly string[], onWorker = false, also: AlsoTouched = {}): Impact {
  if (onWorker) return workerImpactOf(action, backend);
  const stale = also.stale ?? [];
  const staleLine = staleText(stale);
  const restarting = [processesText('restart', models), ...(staleLine ? [staleLine] : [])];
  const name = backend.name;
  const current = version(backend.version);
  const previous = backend.previous ? version(backend.previous.version) : null;
  switch (action) {
    case 'upgrade':
      return {
        title: `Upgrade ${name}?`,
        confirmLabel: 'Upgrade',
        danger: false,
        lines: [
          backend.availableVersion === backend.version
            ? `Installs a new build of ${name} ${current} (the gallery's image changed) in place of the one installed.`
            : `Installs ${name} ${version(backend.availableVersion)} in place of ${current}.`,
          ...restarting,
          previous ? `Will replace the rollback target ${previous} with ${current}.` : `${current} becomes the rollback target.`,
        ],
      };
    case 'reinstall': {
      const sameVersion = !backend.upgradable;
      return {
        title: `Reinstall ${name}?`,
        confirmLabel: 'Reinstall',
        danger: false,
        lines: [
          `Installs ${name} ${sameVersion ? current : version(backend.availableVersion)} again from the gallery, replacing this copy.`,
          ...restarting,
          sameVersion
            ? previous ? `The rollback target ${previous} is kept.` : 'There is no rollback target, and none is made.'
            : previous ? `Will replace the rollback target ${previous} with ${current}.` : `${current} becomes the rollback target.`,
        ],
      };
    }
    case 'rollback':
      return {
        title: `Roll ${name} back to ${previous ?? 'the previous version'}?`,
        confirmLabel: 'Rollback',
        danger: false,
        lines: [
          `Swaps ${previous ?? 'the previous version'} back in for ${current}.`,
          ...restarting,
          `${current} becomes the rollback target, so you can swap forward again.`,
        ],
      };
    case 'delete':
      if (backend.kind !== 'backend' && backend.kept) {
        return {
          title: `Delete the kept copy of ${name}?`,
          confirmLabel: 'Delete',
          danger: true,
          lines: [`Removes ${name} ${current} (${iecBytes(backend.kept?.bytes ?? 0)}), kept from a backend that was deleted outside Hangar. This cannot be undone.`],
        };
      }
      return {
        title: `Delete ${name}?`,
        confirmLabel: 'Delete',
        danger: true,
        lines: [
          processesText('stop', models),
          `Removes ${name} ${current}${previous ? ` and its rollback target ${previous}` : ''}` +
            `${backend.metaBackendFor ? `, and its build ${backend.metaBackendFor} (as LocalAI does)` : ''}${metasText(also.metas ?? [])}. This cannot be undone.`,
        ],
      };
  }
}

/** ", and the meta echo-auto that points at it (as LocalAI does)", or nothing. */
function metasText(metas: readonly string[]): string {
  if (metas.length === 0) return '';
  return metas.length === 1 ? `, and the meta ${metas[0]} that points at it (as LocalAI does)` : `, and the metas ${metas.join(', ')} that point at it (as LocalAI does)`;
}

/**
 * On a LocalAI worker: its upgrade stops every process of the backend and starts none (LocalAI's frontend starts them
 * on their next request), and nothing is kept to roll back to.
 */
function workerImpactOf(action: Confirmed, backend: BackendInfo): Impact {
  const { name } = backend;
  const current = version(backend.version);
  const stops = `The worker stops every process of ${name}; LocalAI's frontend starts them again on their next request.`;
  const noRollback = 'A LocalAI worker keeps no rollback target: run a Hangar agent beside this worker to get one.';
  if (action === 'delete') {
    return { title: `Delete ${name}?`, confirmLabel: 'Delete', danger: true, lines: [`Sends backend.delete: the worker stops the processes of ${name} and removes ${name} ${current}. This cannot be undone.`] };
  }
  const to = action === 'reinstall' && !backend.upgradable ? current : version(backend.availableVersion);
  const verb = action === 'reinstall' ? 'Reinstall' : 'Upgrade';
  return {
    title: `${verb} ${name}?`,
    confirmLabel: verb,
    danger: false,
    lines: [`Sends backend.upgrade: the worker installs ${name} ${to} from the LocalAI cluster's galleries in place of ${current}.`, stops, noRollback],
  };
}

/** Restoring a backup LocalAI set aside, or removing what LocalAI left behind. */
export function leftoverImpact(action: LeftoverAction, backend: BackendInfo): Impact {
  const of = backend.leftover?.of ?? backend.name;
  if (action === 'restore') {
    return {
      title: `Restore ${of} from ${backend.name}?`,
      confirmLabel: 'Restore',
      danger: false,
      lines: [`Renames ${backend.name} back to ${of}, as it was before LocalAI's interrupted swap.`, 'Nothing is downloaded, and no process is started.'],
    };
  }
  return {
    title: `Delete ${backend.name}?`,
    confirmLabel: 'Delete',
    danger: true,
    lines: [`Removes ${backend.name}, which LocalAI left behind; ${of} itself is not touched. This cannot be undone.`],
  };
}

/** Upgrade all: every upgradable backend, what it goes to, and every process that restarts. */
export function upgradeAllImpact(backends: readonly BackendInfo[], modelsByBackend: Readonly<Record<string, readonly string[]>>): Impact {
  const upgradable = backends.filter((b) => b.upgradable);
  const models = upgradable.flatMap((b) => modelsByBackend[b.name] ?? []);
  const noun = upgradable.length === 1 ? 'backend' : 'backends';
  return {
    title: `Upgrade ${upgradable.length} ${noun}?`,
    confirmLabel: 'Upgrade all',
    danger: false,
    lines: [
      `Upgrades ${upgradable.map((b) => `${b.name} ${version(b.version)} → ${offeredVersion(b.version, b.availableVersion)}`).join(', ')}.`,
      processesText('restart', models),
      'Each one\'s current version becomes its rollback target, replacing the one it had.',
    ],
  };
}

/** A node as a cluster-wide action sees it: its name, whether it is away, and its backends as last known. */
export interface NodeSide {
  id: string;
  label: string;
  offline: boolean;
  /** The node refuses this host's calls (its trust list does not hold this host's key). */
  untrusted: boolean;
  /** An admin revoked it: the server refuses its credential, so it never comes back with it. */
  revoked?: boolean;
  backends: readonly BackendView[] | null;
  /** Set for a LocalAI worker: its upgrade stops the backend's processes and starts none. */
  worker?: boolean;
  /** Set for a cordoned node: no rollout touches it. */
  cordoned?: boolean;
}

/** What a version change does to the backend's processes on a node. */
function restarts(backend: BackendView | undefined, node?: NodeSide): string {
  const models = backend?.processes.map((p) => p.model) ?? [];
  if (node?.worker) {
    if (models.length === 0) return 'no process to stop';
    return `stops ${models.join(', ')} (LocalAI's frontend starts ${models.length === 1 ? 'it' : 'them'} again on the next request)`;
  }
  return models.length === 0 ? 'no process to restart' : `restarts ${models.join(', ')}`;
}

/** Upgrade on all nodes: every node with its version change and the processes it restarts, or why it is left alone. */
export function rolloutImpact(name: string, nodes: readonly NodeSide[]): Impact {
  const lines = nodes.map((node) => {
    if (node.revoked) return `${node.label}: revoked from the cluster, passed by.`;
    if (node.offline) return `${node.label}: offline, passed by.`;
    if (node.untrusted) return `${node.label}: does not trust this host, passed by.`;
    if (node.cordoned) return `${node.label}: cordoned, passed by.`;
    const backend = node.backends?.find((b) => b.name === name);
    if (node.backends === null) return `${node.label}: not read yet; upgraded if ${name} has an upgrade there.`;
    if (!backend) return `${node.label}: ${name} is not installed, left alone.`;
    if (!backend.upgradable) return `${node.label}: already ${version(backend.version)}, left alone.`;
    return `${node.label}: ${version(backend.version)} → ${offeredVersion(backend.version, backend.availableVersion)}, ${restarts(backend, node)}.`;
  });
  const upgraded = nodes.filter((n) => !n.offline && !n.untrusted && !n.cordoned && n.backends?.some((b) => b.name === name && b.upgradable)).length;
  return {
    title: `Upgrade ${name} on ${upgraded} node${upgraded === 1 ? '' : 's'}?`,
    confirmLabel: 'Upgrade on all nodes',
    danger: false,
    lines,
    rule: 'One node at a time, its processes back and healthy before the next. It stops at the first node that fails: the nodes after it are left as they are.',
  };
}

/**
 * Roll back a rollout: every node it upgraded, and every node its desired version moved after it passed them by (as
 * `said`, the nodes' own convergence, tells), going back, with the processes each restarts.
 */
export function rollbackImpact(rollout: RolloutView, nodes: readonly NodeSide[], said: readonly NodeConvergence[] = []): Impact {
  const upgraded = rollbackNodes(rollout, said, (id) => nodes.find((n) => n.id === id)?.label).filter((n) => n.step === 'upgraded');
  const lines = upgraded.map((step) => {
    const node = nodes.find((n) => n.id === step.id);
    const label = node?.label ?? step.name;
    if (node?.revoked) return `${label}: revoked from the cluster; its rollback will fail.`;
    if (node?.offline) return `${label}: offline; its rollback will fail.`;
    const backend = node?.backends?.find((b) => b.name === rollout.backend);
    return `${label}: ${version(step.to)} → ${version(step.from)}${isConvergedLater(step) ? ` (${step.reason})` : ''}, ${restarts(backend)}.`;
  });
  return {
    title: `Roll back the rollout of ${rollout.backend} on ${upgraded.length} node${upgraded.length === 1 ? '' : 's'}?`,
    confirmLabel: 'Roll back',
    danger: false,
    lines,
    rule: 'One node after another. A node that cannot roll back is named, and the others still roll back.',
  };
}

/** Resume an interrupted rollout: the nodes it still has to bring to its version, from the step it last knew. */
export function resumeImpact(rollout: RolloutView, nodes: readonly NodeSide[]): Impact {
  const left = rollout.nodes.filter((n) => n.step === 'pending' || n.step === 'upgrading');
  const lines = left.map((step) => {
    const node = nodes.find((n) => n.id === step.id);
    const label = node?.label ?? step.name;
    if (node?.revoked) return `${label}: revoked from the cluster, passed by.`;
    if (node?.offline) return `${label}: away, passed by.`;
    const backend = node?.backends?.find((b) => b.name === rollout.backend);
    if (backend && backend.version === rollout.version) return `${label}: already ${version(backend.version)}, left as it is.`;
    return `${label}: ${version(backend?.version)} → ${version(rollout.version ?? backend?.availableVersion)}, ${restarts(backend, node)}.`;
  });
  return {
    title: `Resume the rollout of ${rollout.backend} on ${left.length} node${left.length === 1 ? '' : 's'}?`,
    confirmLabel: 'Resume',
    danger: false,
    lines,
    rule: 'This host takes it over: one node at a time, as before, stopping at the first node that fails. Another viewer that tries at the same moment is told this one did.',
  };
}

/** Pin a version: what each node it selects does about it, now or when it comes back. */
export function pinImpact(name: string, wanted: string, selected: readonly NodeSide[]): Impact {
  const lines = selected.map((node) => {
    if (node.revoked) return `${node.label}: revoked from the cluster; it cannot come back to follow.`;
    if (node.offline) return `${node.label}: away; it follows when it is back.`;
    const backend = node.backends?.find((b) => b.name === name);
    if (node.backends === null) return `${node.label}: not read yet; it follows by itself.`;
    if (!backend) return `${node.label}: installs ${name} ${wanted}.`;
    if (backend.version === wanted) return `${node.label}: already ${wanted}.`;
    return `${node.label}: ${version(backend.version)} → ${wanted}, ${restarts(backend, node)}.`;
  });
  return {
    title: `Pin ${name} ${wanted} on ${selected.length} node${selected.length === 1 ? '' : 's'}?`,
    confirmLabel: 'Pin',
    danger: false,
    lines,
    rule: 'Each node moves by itself, with the health gate and rollback of any upgrade; one whose galleries do not offer the version says so. Nodes that join later follow it too.',
  };
}
