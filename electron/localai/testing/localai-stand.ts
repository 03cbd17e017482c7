// A home where Hangar runs LocalAI, for tests that drive it as a user does: LocalAI's releases served by the stand-in,
// an agent on them with the echo backend installed, m1 and m2 configured on it, and the calls a test makes to the
// LocalAI that agent runs (tests only).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LocalAiRunView } from '../../../shared/types.ts';
import { hangar, json, startAgent, until, type Agent } from '../../agent/test-agent.ts';
import { echoSource, tempDir, writeGallery } from '../../core/testing/fixtures.ts';
import { releasePlatform } from '../runner/release.ts';
import { StandInReleases } from './standin-releases.ts';

export interface LocalAiStand {
  root: string;
  home: string;
  gallery: string;
  releases: StandInReleases;
  agent: Agent;
  /** Everything the agent wrote on stderr, from its start. */
  stderr(): string;
  /** An agent on the same home and releases, in place of the one before (which must have ended). */
  restart(): Promise<void>;
  status(): Promise<LocalAiRunView>;
  ok(...args: string[]): Promise<{ stdout: string; stderr: string }>;
  call(view: LocalAiRunView, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }>;
  loaded(view: LocalAiRunView): Promise<string[]>;
  /** Until LocalAI is ready (on another pid than `not`, when given). */
  ready(not?: number | null): Promise<LocalAiRunView>;
  close(): Promise<void>;
}

/** `ports`: the backend port range of this stand's agent, apart from every other test file's. */
export async function localAiStand(name: string, ports: string): Promise<LocalAiStand> {
  const root = await tempDir(name);
  const home = join(root, 'home');
  const gallery = join(root, 'index.yaml');
  await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
  const releases = new StandInReleases(root, releasePlatform()!);
  await releases.start();
  let stderr = '';
  const begin = async () => {
    const agent = await startAgent(home, gallery, ['--localai-releases', releases.url, '--ports', ports]);
    stderr = '';
    agent.child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    return agent;
  };
  const apiKey = async () => (await readFile(join(home, 'state', 'localai-api-key'), 'utf8')).trim();
  const stand: LocalAiStand = {
    root,
    home,
    gallery,
    releases,
    agent: await begin(),
    stderr: () => stderr,
    async restart() {
      stand.agent = await begin();
    },
    status: () => json<LocalAiRunView>(stand.agent, 'localai', 'status'),
    async ok(...args) {
      const result = await hangar(stand.agent, ...args);
      assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
      return result;
    },
    async call(view, path, body) {
      const response = await fetch(view.url + path, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${await apiKey()}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    },
    async loaded(view) {
      return ((await stand.call(view, '/system')).body.loaded_models as Array<{ id: string }>).map((m) => m.id).sort();
    },
    ready: (not = null) =>
      until('LocalAI ready', async () => {
        const view = await stand.status();
        return view.state === 'ready' && view.pid !== not ? view : undefined;
      }, 20_000),
    async close() {
      const { child } = stand.agent;
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await new Promise((resolve) => child.once('exit', resolve));
      }
      await releases.stop();
      await rm(root, { recursive: true, force: true });
    },
  };
  await stand.ok('install', 'echo');
  await mkdir(join(home, 'models'), { recursive: true });
  await writeFile(join(home, 'models', 'm1.yaml'), 'name: m1\nbackend: echo\n');
  await writeFile(join(home, 'models', 'm2.yaml'), 'name: m2\nbackend: echo\n');
  return stand;
}

/** Running, not a zombie waiting for whichever process inherited it to reap it. */
export function alive(pid: number): boolean {
  try {
    return !/^[ZX]$/.test(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[0]!);
  } catch {
    return false;
  }
}
