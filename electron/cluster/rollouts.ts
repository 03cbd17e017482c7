import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NodeApi } from '../../shared/api.ts';
import { HangarError } from '../../shared/errors.ts';
import type { JobView, NodeCard, NodeEvent, RolloutNode, RolloutView } from '../../shared/types.ts';
import { oneLine } from '../core/jobs.ts';

export interface RolloutsOptions {
  /** Routes by node: every member is reached through it. */
  api: NodeApi;
  nodes(): Promise<NodeCard[]>;
  stateDir: string;
  emit(event: NodeEvent): void;
  /** How long an upgraded node's processes may take to be back and healthy. */
  readyTimeoutMs?: number;
}

const KEPT = 50;
const READY_POLL_MS = 250;
const DEFAULT_READY_TIMEOUT_MS = 120_000;

/**
 * Rolling upgrades: one node (or maxParallel) at a time, each node's processes back and healthy before the next,
 * a halt at the first failure with the rest untouched, and a record of each rollout kept in the home.
 */
export class Rollouts {
  private records: RolloutView[] | undefined;
  private readonly running = new Set<Promise<void>>();
  private saving = Promise.resolve();

  constructor(private readonly options: RolloutsOptions) {}

  get file(): string {
    return join(this.options.stateDir, 'rollouts.json');
  }

  async list(): Promise<RolloutView[]> {
    return structuredClone(await this.load());
  }

  async start(backend: string, maxParallel: number): Promise<RolloutView> {
    const records = await this.load();
    const members = await this.options.nodes();
    const rollout: RolloutView = {
      id: randomUUID(),
      backend,
      maxParallel,
      state: 'running',
      startedAt: new Date().toISOString(),
      finishedAt: null,
      nodes: members.map((m) => ({ id: m.id, name: m.name, step: 'pending', reason: null, from: null, to: null })),
    };
    records.unshift(rollout);
    records.splice(KEPT);
    await this.changed(rollout);
    const started = structuredClone(rollout);
    this.track(this.run(rollout, members));
    return started;
  }

  async rollBack(id: string): Promise<RolloutView> {
    const rollout = (await this.load()).find((r) => r.id === id);
    if (!rollout) throw new HangarError('not-found', `no rollout ${id}`);
    if (rollout.state === 'running' || rollout.state === 'rolling-back') throw new HangarError('conflict', `rollout ${id} is still ${rollout.state}`);
    const upgraded = rollout.nodes.filter((n) => n.step === 'upgraded');
    if (upgraded.length === 0) throw new HangarError('conflict', `rollout ${id} upgraded no node that could be rolled back`);
    rollout.state = 'rolling-back';
    await this.changed(rollout);
    const started = structuredClone(rollout);
    this.track(this.runRollback(rollout, upgraded));
    return started;
  }

  /** Resolves when no rollout is running (the host waits for it before closing). */
  async idle(): Promise<void> {
    await Promise.all(this.running);
    await this.saving;
  }

  private track(work: Promise<void>): void {
    this.running.add(work);
    void work.finally(() => this.running.delete(work));
  }

  private async run(rollout: RolloutView, members: NodeCard[]): Promise<void> {
    const queue = [...rollout.nodes];
    let failed: RolloutNode | undefined;
    const worker = async () => {
      for (let step = queue.shift(); step && !failed; step = queue.shift()) {
        await this.upgradeNode(rollout, step, members.find((m) => m.id === step.id)!);
        if (step.step === 'failed') failed ??= step;
      }
    };
    await Promise.all(Array.from({ length: Math.min(rollout.maxParallel, queue.length) }, worker));
    for (const step of rollout.nodes.filter((n) => n.step === 'pending')) {
      Object.assign(step, { step: 'skipped', reason: `halted: ${failed?.name ?? 'a node'} failed` });
    }
    rollout.state = failed ? 'halted' : 'done';
    rollout.finishedAt = new Date().toISOString();
    await this.changed(rollout);
  }

  private async upgradeNode(rollout: RolloutView, step: RolloutNode, member: NodeCard): Promise<void> {
    const { api } = this.options;
    const node = member.id;
    // An offline node is left as it is and said so; it is no failure of the new version.
    if (member.status !== 'online') return this.mark(rollout, step, 'skipped', `offline: ${member.reason ?? 'no heartbeat'}`);
    // So is a node that does not let this host act on it.
    if (member.access === 'not-trusted') return this.mark(rollout, step, 'skipped', 'not trusted by this node');
    await this.mark(rollout, step, 'upgrading', null);
    try {
      const backend = (await api.backends({ node })).find((b) => b.name === rollout.backend);
      if (!backend) return await this.mark(rollout, step, 'skipped', 'not installed');
      step.from = backend.version;
      if (!backend.upgradable) return await this.mark(rollout, step, 'unchanged', 'up to date');
      step.to = backend.availableVersion;
      const models = backend.processes.map((p) => p.model);
      const job = await api.upgrade({ node, name: rollout.backend });
      const final = await api.waitJob({ node, id: job.id });
      if (final.state !== 'done') return await this.mark(rollout, step, 'failed', jobFailure(final));
      await this.waitReady(node, rollout.backend, models);
      await this.mark(rollout, step, 'upgraded', null);
    } catch (error) {
      await this.mark(rollout, step, 'failed', oneLine(error));
    }
  }

  /** The models the backend served before the upgrade are served again, each process ready (Health OK) and fresh. */
  private async waitReady(node: string, backend: string, models: string[]): Promise<void> {
    const deadline = Date.now() + (this.options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS);
    for (;;) {
      const processes = (await this.options.api.processes({ node })).filter((p) => p.backend === backend);
      const missing = models.filter((m) => !processes.some((p) => p.model === m && p.state === 'ready' && p.cwd !== 'stale'));
      if (missing.length === 0) return;
      if (Date.now() > deadline) throw new Error(`upgraded, but ${missing.join(', ')} did not come back healthy`);
      await sleep(READY_POLL_MS);
    }
  }

  private async runRollback(rollout: RolloutView, upgraded: RolloutNode[]): Promise<void> {
    for (const step of upgraded) {
      try {
        const job = await this.options.api.rollback({ node: step.id, name: rollout.backend });
        const final = await this.options.api.waitJob({ node: step.id, id: job.id });
        if (final.state !== 'done') throw new Error(jobFailure(final));
        await this.mark(rollout, step, 'rolled-back', null);
      } catch (error) {
        await this.mark(rollout, step, 'upgraded', `rollback failed: ${oneLine(error)}`);
      }
    }
    rollout.state = 'rolled-back';
    rollout.finishedAt = new Date().toISOString();
    await this.changed(rollout);
  }

  private async mark(rollout: RolloutView, step: RolloutNode, to: RolloutNode['step'], reason: string | null): Promise<void> {
    Object.assign(step, { step: to, reason });
    await this.changed(rollout);
  }

  private async changed(rollout: RolloutView): Promise<void> {
    this.options.emit({ type: 'rollout', node: 'local', rollout: structuredClone(rollout) });
    this.saving = this.saving.then(() => this.save(), () => this.save());
    await this.saving;
  }

  private async load(): Promise<RolloutView[]> {
    if (this.records) return this.records;
    const text = await readFile(this.file, 'utf8').catch(() => '[]');
    let records: RolloutView[];
    try {
      records = JSON.parse(text) as RolloutView[];
      if (!Array.isArray(records)) records = [];
    } catch {
      records = [];
    }
    // A rollout that was running when the host stopped went no further.
    for (const r of records.filter((r) => r.state === 'running' || r.state === 'rolling-back')) {
      for (const step of r.nodes.filter((n) => n.step === 'pending' || n.step === 'upgrading')) {
        Object.assign(step, { step: step.step === 'pending' ? 'skipped' : 'failed', reason: 'the host stopped during the rollout' });
      }
      r.state = r.state === 'running' ? 'halted' : 'rolled-back';
      r.finishedAt ??= new Date().toISOString();
    }
    this.records ??= records;
    return this.records;
  }

  private async save(): Promise<void> {
    await mkdir(this.options.stateDir, { recursive: true });
    const temp = `${this.file}.tmp`;
    await writeFile(temp, JSON.stringify(this.records ?? [], null, 2) + '\n', { mode: 0o600 });
    await rename(temp, this.file);
  }
}

function jobFailure(job: JobView): string {
  return job.error ?? `${job.kind} ${job.state}`;
}
