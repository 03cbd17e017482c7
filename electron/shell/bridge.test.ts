import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { HangarError, hangarMethods, type HangarApi, type NodeEvent } from '../../shared/index.ts';
import { APP_URL } from './app-protocol.ts';
import { createBridge, type Invoke, type Subscribe } from './bridge.ts';
import { EVENT_CHANNEL } from './ipc-contract.ts';
import { createRouter } from './router.ts';

const frame = { url: APP_URL, parent: null, frameTreeNodeId: 1 };

/** The preload's view of IPC, wired straight to the router through structured clone, as Electron's IPC does. */
function loopback(node: HangarApi) {
  const route = createRouter(node, (sender) => sender === frame);
  const channels: string[] = [];
  const invoke: Invoke = async (channel, payload) => {
    channels.push(channel);
    return structuredClone(await route(channel.replace(/^hangar:/, ''), frame, structuredClone(payload)));
  };
  const events = new EventEmitter();
  const subscribe: Subscribe = (channel, listener) => {
    events.on(channel, listener);
    return () => events.off(channel, listener);
  };
  return { bridge: createBridge(invoke, subscribe), channels, events };
}

const node = Object.fromEntries(
  hangarMethods.map((m) => [
    m,
    async (req: { name?: string }) => {
      if (req.name === 'missing') throw new HangarError('not-found', 'backend "missing" is not in any gallery');
      return { method: m, req };
    },
  ]),
) as unknown as HangarApi;

describe('bridge', () => {
  it('offers exactly the contract methods plus onEvent', () => {
    const { bridge } = loopback(node);
    assert.deepEqual(Object.keys(bridge).sort(), [...hangarMethods, 'onEvent'].sort());
    for (const value of Object.values(bridge)) assert.equal(typeof value, 'function');
  });

  it('calls one channel per method and resolves the value', async () => {
    const { bridge, channels } = loopback(node);
    assert.deepEqual(await bridge.install({ node: 'local', name: 'echo', force: true }), {
      method: 'install',
      req: { node: 'local', name: 'echo', force: true },
    });
    await bridge.info({ node: 'local' });
    assert.deepEqual(channels, ['hangar:install', 'hangar:info']);
  });

  it('rejects with an Error carrying the envelope code and message', async () => {
    const { bridge } = loopback(node);
    await assert.rejects(bridge.upgrade({ node: 'local', name: 'missing' }), (error: unknown) => {
      assert.ok(error instanceof Error);
      assert.equal(error.message, 'backend "missing" is not in any gallery');
      assert.equal((error as HangarError).code, 'not-found');
      return true;
    });
    await assert.rejects(bridge.upgrade({ node: 'local', name: '../etc' } as never), { code: 'bad-input', message: /^name may hold only / });
  });

  it('rejects a malformed reply instead of resolving it', async () => {
    const bridge = createBridge(async () => ({ value: 'no ok flag' }), () => () => undefined);
    await assert.rejects(bridge.info({ node: 'local' }), { code: 'failed' });
  });

  it('delivers events until unsubscribed', () => {
    const { bridge, events } = loopback(node);
    const seen: NodeEvent[] = [];
    const unsubscribe = bridge.onEvent((event) => seen.push(event));
    const event: NodeEvent = { type: 'gallery-changed', node: 'local', problems: [] };
    events.emit(EVENT_CHANNEL, event);
    unsubscribe();
    events.emit(EVENT_CHANNEL, event);
    assert.deepEqual(seen, [event]);
  });
});
