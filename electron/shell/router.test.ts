import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { HangarError, hangarMethods, requestSchemas, type HangarApi, type HangarMethod } from '../../shared/index.ts';
import { fixedClusterSettings } from '../cluster/cluster-settings.ts';
import { createHost } from '../fleet/host.ts';
import { LocalNode } from '../core/node.ts';
import { APP_URL } from './app-protocol.ts';
import { createRouter } from './router.ts';
import { senderCheck, type FrameLike } from './trust.ts';

const mainFrame: FrameLike = { url: APP_URL, parent: null, frameTreeNodeId: 7 };
const trusted = senderCheck(APP_URL, () => mainFrame);

/** Records every request that reaches `target`, then passes it on. */
function recording(target: (method: HangarMethod, request: unknown) => Promise<unknown>) {
  const calls: Array<{ method: HangarMethod; request: unknown }> = [];
  const node = Object.fromEntries(
    hangarMethods.map((method) => [
      method,
      (request: unknown) => {
        calls.push({ method, request });
        return target(method, request);
      },
    ]),
  ) as unknown as HangarApi;
  return { node, calls };
}

const recordingNode = () => recording(async (method) => ({ answered: method }));

/** What Electron's IPC does to a payload on its way from the renderer. */
const overIpc = (payload: unknown) => structuredClone(payload);
/** How a payload that fails its schema is refused: malformed, or for a typed name against its rule, bad input. */
const REFUSALS: readonly string[] = ['invalid-request', 'bad-input'];

function validRequest(method: HangarMethod): Record<string, unknown> {
  const request: Record<string, unknown> = { node: 'local' };
  for (const key of Object.keys(requestSchemas[method].shape)) {
    if (key === 'name' || key === 'backend') request[key] = 'echo';
    if (key === 'model') request[key] = 'm1';
    if (key === 'id') request[key] = 'job-1';
    if (key === 'pid') request[key] = 4242;
    if (key === 'restartDelayMs') request[key] = 1000;
    if (key === 'maxRestarts') request[key] = 5;
    if (key === 'lines') request[key] = 200;
  }
  return request;
}

describe('router', () => {
  it('refuses foreign senders for every method and never calls the node', async () => {
    const { node, calls } = recordingNode();
    const route = createRouter(node, trusted);
    const foreign: Array<[string, FrameLike | null]> = [
      ['another page of ours', { ...mainFrame, url: 'hangar://app/other.html' }],
      ['a web page', { ...mainFrame, url: 'https://example.com/index.html' }],
      ['a file page', { ...mainFrame, url: 'file:///index.html' }],
      ['another host on our scheme', { ...mainFrame, url: 'hangar://evil/index.html' }],
      ['a subframe showing our page', { url: APP_URL, parent: mainFrame, frameTreeNodeId: 8 }],
      ['the main frame of another window', { url: APP_URL, parent: null, frameTreeNodeId: 9 }],
      ['a destroyed frame', null],
    ];
    for (const method of hangarMethods) {
      for (const [what, frame] of foreign) {
        const reply = await route(method, frame, validRequest(method));
        assert.deepEqual(reply.ok ? null : reply.error.code, 'forbidden', `${method} from ${what}`);
      }
    }
    assert.equal(calls.length, 0);
  });

  it('accepts the app page with in-page state in its URL', async () => {
    const { node, calls } = recordingNode();
    const route = createRouter(node, senderCheck(APP_URL, () => mainFrame));
    const reply = await route('info', { ...mainFrame, url: `${APP_URL}#/gallery` }, { node: 'local' });
    assert.deepEqual(reply, { ok: true, value: { answered: 'info' } });
    assert.deepEqual(calls, [{ method: 'info', request: { node: 'local' } }]);
  });

  it('rejects every schema-failing payload as malformed (a name against its rule as bad input), naming the field', async () => {
    const { node, calls } = recordingNode();
    const route = createRouter(node, trusted);
    for (const method of hangarMethods) {
      const valid = validRequest(method);
      const shape = requestSchemas[method].shape as Record<string, { isOptional(): boolean }>;
      const bad: unknown[] = [undefined, null, 0, 'local', [], [valid], {}, { ...valid, extra: true }];
      for (const key of Object.keys(shape)) {
        // A number field gets numbers it must refuse (a pid of 42 is a pid; a restart delay of 0 is no delay); every
        // other field gets 42.
        const wrongNumbers = typeof valid[key] === 'number' ? [4.2, -1, ...(key === 'restartDelayMs' ? [] : [0]), 2 ** 40, Number.NaN] : [42];
        bad.push(...wrongNumbers.map((n) => ({ ...valid, [key]: n })), { ...valid, [key]: '../../etc' }, { ...valid, [key]: { toString: 'x' } });
        if (!shape[key]!.isOptional()) bad.push(Object.fromEntries(Object.entries(valid).filter(([k]) => k !== key)));
      }
      for (const payload of bad) {
        const reply = await route(method, mainFrame, overIpc(payload));
        assert.equal(reply.ok, false, `${method} accepted ${JSON.stringify(payload)}`);
        assert.ok(!reply.ok && REFUSALS.includes(reply.error.code), `${method}: ${JSON.stringify(reply)}`);
      }
      const named = await route(method, mainFrame, { ...valid, node: 42 });
      assert.equal(named.ok ? '' : named.error.message, 'node must be text');
    }
    assert.equal(calls.length, 0);
  });

  it('rejects a method outside the contract', async () => {
    const { node, calls } = recordingNode();
    const reply = await createRouter(node, trusted)('constructor', mainFrame, { node: 'local' });
    assert.deepEqual(reply.ok ? null : reply.error.code, 'invalid-request');
    assert.equal(calls.length, 0);
  });

  it('turns what the node throws into an envelope without a stack', async () => {
    const failures: Record<string, unknown> = {
      info: new HangarError('not-found', 'backend "echo" is not installed'),
      backends: new Error('disk on fire\n    at readdir (node:fs:1:1)\n    at Object.<anonymous>'),
      jobs: 'a thrown string',
    };
    const node = Object.fromEntries(
      hangarMethods.map((m) => [m, async () => { throw failures[m]; }]),
    ) as unknown as HangarApi;
    const route = createRouter(node, trusted);
    assert.deepEqual(await route('info', mainFrame, { node: 'local' }), {
      ok: false,
      error: { code: 'not-found', message: 'backend "echo" is not installed' },
    });
    const failed = await route('backends', mainFrame, { node: 'local' });
    assert.deepEqual(failed.ok ? null : failed.error.code, 'failed');
    assert.ok(!failed.ok && failed.error.message.startsWith('disk on fire') && !/\n|at readdir/.test(failed.error.message));
    assert.deepEqual(await route('jobs', mainFrame, { node: 'local' }), { ok: false, error: { code: 'failed', message: 'a thrown string' } });
  });
});

describe('router fuzz', () => {
  const PER_CHANNEL = 1000;

  it(`${PER_CHANNEL} random payloads per channel reach a real node only when they pass the schema`, async () => {
    const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
    const random = mulberry32(seed);
    const root = await mkdtemp(join(tmpdir(), 'hangar-router-fuzz-'));
    const gallery = join(root, 'index.yaml');
    await writeFile(gallery, `- name: echo\n  uri: ${join(root, 'no-such-source')}\n  version: 1.0.0\n`);
    const local = new LocalNode({ home: join(root, 'home'), galleries: [{ name: 'fuzz', location: gallery }], runtimeEnv: {} });
    const host = createHost({ node: local, cluster: null, stateDir: local.stateDir, clusterSettings: fixedClusterSettings(undefined) });
    const { node, calls } = recording((method, request) => (host[method] as (r: unknown) => Promise<unknown>).call(host, request));
    const route = createRouter(node, trusted);
    try {
      await local.start();
      let accepted = 0;
      for (const method of hangarMethods) {
        for (let i = 0; i < PER_CHANNEL; i++) {
          const payload = overIpc(randomPayload(random, validRequest(method)));
          const before = calls.length;
          const reply = await route(method, mainFrame, payload);
          const verdict = requestSchemas[method].safeParse(payload);
          const context = `seed ${seed}, ${method} #${i}: ${JSON.stringify(reply).slice(0, 200)}`;
          if (verdict.success) {
            accepted++;
            assert.equal(calls.length, before + 1, context);
            assert.deepEqual(calls.at(-1), { method, request: verdict.data }, context);
          } else {
            assert.ok(!reply.ok && REFUSALS.includes(reply.error.code), context);
            assert.equal(calls.length, before, context);
          }
          if (!reply.ok) assert.ok(reply.error.message.length <= 300 && !/[\n\r]/.test(reply.error.message), context);
        }
      }
      assert.ok(accepted > 0 && accepted < hangarMethods.length * PER_CHANNEL, `seed ${seed}: fuzz exercised both outcomes`);
      assert.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype was polluted');

      for (const job of await local.jobs({ node: 'local' })) await local.waitJob({ node: 'local', id: job.id });
      assert.deepEqual(await route('backends', mainFrame, { node: 'local' }), { ok: true, value: [] });
      const info = await route('info', mainFrame, { node: 'local' });
      assert.ok(info.ok, JSON.stringify(info));
      assert.deepEqual(
        (({ id, home, galleries }) => ({ id, home, galleries }))(info.value as { id: string; home: string; galleries: string[] }),
        { id: 'local', home: join(root, 'home'), galleries: ['fuzz'] },
      );
    } finally {
      // The supervisor's reaper child is unref'd and close() awaits its exit: hold the loop open meanwhile.
      const keepAlive = setInterval(() => undefined, 1000);
      await host.close();
      await local.close({ stopBackends: true }).finally(() => clearInterval(keepAlive));
      await rm(root, { recursive: true, force: true });
    }
  });
});

type Random = () => number;

function mulberry32(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

const NASTY_STRINGS = [
  '', 'local', 'echo', '../echo', '../../etc/passwd', '..', '.', 'echo/../../x', 'echo.install-backup', 'echo.install-tmp',
  'a@b', '@', 'gallery@echo', 'x'.repeat(129), '-echo', 'echo\0', 'éçho', '__proto__', 'constructor', 'prototype',
  'C:\\Windows', '%2e%2e%2f', 'job-1', 'm1', 'model:q4', ' echo', 'echo\n',
];

function randomString(random: Random): string {
  const roll = random();
  if (roll < 0.5) return pick(random, NASTY_STRINGS);
  if (roll < 0.52) return 'A'.repeat(100_000 + Math.floor(random() * 100_000));
  const length = Math.floor(random() * 40);
  let text = '';
  for (let i = 0; i < length; i++) text += String.fromCharCode(random() < 0.8 ? 32 + Math.floor(random() * 95) : Math.floor(random() * 0xffff));
  return text;
}

function randomJson(random: Random, depth: number): unknown {
  const roll = random();
  if (depth > 3 || roll < 0.25) return randomString(random);
  if (roll < 0.45) return pick(random, [null, true, false, 0, -1, 42, 3.5, 1e308, Number.NaN, Math.floor(random() * 1e9)]);
  if (roll < 0.6) return Array.from({ length: Math.floor(random() * 4) }, () => randomJson(random, depth + 1));
  const object: Record<string, unknown> = {};
  for (let i = Math.floor(random() * 4); i > 0; i--) object[randomString(random).slice(0, 20)] = randomJson(random, depth + 1);
  return object;
}

function deeplyNested(depth: number): unknown {
  let value: unknown = { node: 'local' };
  for (let i = 0; i < depth; i++) value = { node: value };
  return value;
}

/** A mix of garbage and near-misses of a valid request, so both outcomes of the schema are exercised. */
function randomPayload(random: Random, valid: Record<string, unknown>): unknown {
  const roll = random();
  if (roll < 0.15) return randomJson(random, 0);
  if (roll < 0.2) return deeplyNested(50 + Math.floor(random() * 950));
  if (roll < 0.3) {
    const key = pick(random, ['__proto__', 'constructor', 'prototype']);
    return JSON.parse(`{"node":"local","${key}":{"polluted":true,"prototype":{"polluted":true}}}`);
  }
  const payload: Record<string, unknown> = { ...valid };
  const keys = Object.keys(valid);
  for (let edits = 1 + Math.floor(random() * 2); edits > 0; edits--) {
    const action = random();
    const key = pick(random, keys);
    if (action < 0.5) payload[key] = randomString(random);
    else if (action < 0.7) payload[key] = randomJson(random, 2);
    else if (action < 0.8) delete payload[key];
    else if (action < 0.9) payload[randomString(random).slice(0, 12)] = randomJson(random, 3);
    else if (action < 0.95) payload.force = random() < 0.5;
    // else: leave it valid
  }
  return payload;
}
