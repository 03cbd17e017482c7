// LocalAI's protocol as Hangar reads it: subjects, sizes, process keys, gallery addresses, the pairing rule, and a
// worker that answers badly, on a real nats-server.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { BackendView, NodeCard } from '../../shared/types.ts';
import { startNats, type NatsServer } from '../cluster/test-nats.ts';
import { specOf } from './cluster-galleries.ts';
import { addressHost, sameDirectory, sameMachine } from './pairing.ts';
import { formatLocalAiSize, parseLocalAiSize, parseProcessKey, sanitizeSubjectToken, workerSubjects, type WorkerBackend } from './protocol.ts';
import { WorkerClient, WorkerFailure } from './worker-client.ts';

test("subjects carry the node id as LocalAI sanitises it: its separator, wildcards and whitespace become '-'", () => {
  assert.equal(sanitizeSubjectToken('a.b*c>d e\tf\ng'), 'a-b-c-d-e-f-g');
  assert.equal(workerSubjects.list('gpu.1'), 'nodes.gpu-1.backend.list');
  assert.equal(workerSubjects.installProgress('n1', 'op.1'), 'nodes.n1.backend.install.op-1.progress');
});

test("sizes read and written as LocalAI formats them; process keys split on their last '#'", () => {
  for (const [text, bytes] of [['412 B', 412], ['1.5 KiB', 1536], ['2.0 GiB', 2 * 1024 ** 3]] as const) assert.equal(parseLocalAiSize(text), bytes);
  assert.equal(parseLocalAiSize('412 MB'), null);
  assert.equal(formatLocalAiSize(1023), '1023 B');
  assert.equal(formatLocalAiSize(1024 * 1024), '1.0 MiB');
  assert.deepEqual(parseProcessKey('org#model#2'), { model: 'org#model', replica: 2 });
  assert.equal(parseProcessKey('model'), null);
  assert.equal(parseProcessKey('model#x'), null);
});

test("the frontend's galleries as Hangar reads them: github: shorthand as its raw file, http(s) as is", () => {
  assert.deepEqual(specOf({ name: 'localai', url: 'github:mudler/LocalAI/backend/index.yaml@master' }), [
    { name: 'localai', location: 'https://raw.githubusercontent.com/mudler/LocalAI/master/backend/index.yaml' },
  ]);
  assert.deepEqual(specOf({ name: 'x', url: 'github://org/repo/a/b.yaml' }), [{ name: 'x', location: 'https://raw.githubusercontent.com/org/repo/main/a/b.yaml' }]);
  assert.deepEqual(specOf({ name: 'web', url: 'https://example.org/index.yaml' }), [{ name: 'web', location: 'https://example.org/index.yaml' }]);
  assert.deepEqual(specOf({ name: 'odd', url: 'huggingface://x/y' }), []);
});

describe('one machine, one backends directory', () => {
  const card = { host: 'gpu1.lan' } as NodeCard;
  const row = (name: string, installedAt: string): WorkerBackend => ({ name, is_system: false, is_meta: false, installed_at: installedAt, gallery_url: '', version: '1.0', uri: '', digest: '' });
  const view = (name: string, installedAt: string) => ({ name, kind: 'backend', metaBackendFor: null, version: '1.0', digest: null, installedAt }) as BackendView;

  test("the worker's registered address is the node's hostname or one of its addresses", () => {
    assert.equal(addressHost('[fe80::1]:50051'), 'fe80::1');
    assert.equal(addressHost('GPU1:50051'), 'gpu1');
    assert.ok(sameMachine('gpu1:50051', { card, info: { addresses: [] } }));
    assert.ok(sameMachine('gpu1.lan:50051', { card, info: { addresses: [] } }));
    assert.ok(sameMachine('10.0.0.7:50051', { card, info: { addresses: ['10.0.0.7'] } }));
    assert.ok(!sameMachine('10.0.0.8:50051', { card, info: { addresses: ['10.0.0.7'] } }));
  });

  test('the same backends installed at the same second; nothing installed tells nothing', () => {
    assert.ok(sameDirectory([row('a', '2026-01-01T10:00:00Z')], [view('a', '2026-01-01T10:00:00Z')]));
    assert.ok(!sameDirectory([row('a', '2026-01-01T10:00:00Z')], [view('a', '2026-01-01T10:00:01Z')]));
    assert.ok(!sameDirectory([row('a', '2026-01-01T10:00:00Z')], [view('a', '2026-01-01T10:00:00Z'), view('b', '2026-01-01T10:00:00Z')]));
    assert.ok(!sameDirectory([], []));
  });
});

describe('a worker that answers badly', () => {
  let nats: NatsServer;
  let worker: NatsConnection;
  let nc: NatsConnection;
  let client: WorkerClient;
  const answer = (subject: string, reply: (body: string) => string | null) =>
    worker.subscribe(subject, {
      callback: (_e, msg) => {
        const text = reply(msg.string());
        if (text !== null) msg.respond(text);
      },
    });

  before(async () => {
    nats = await startNats();
    worker = await connect({ servers: nats.url.replace('nats://', '') });
    nc = await connect({ servers: nats.url.replace('nats://', '') });
    client = new WorkerClient(nc, { install: 2000, upgrade: 2000, list: 500, running: 500, delete: 500, unload: 500, modelStop: 500 });
    answer(workerSubjects.list('empty'), () => '{"backends":null}');
    answer(workerSubjects.running('empty'), () => '{"models":[]}');
    answer(workerSubjects.list('broken'), () => '{"backends":"nope"}');
    answer(workerSubjects.running('broken'), () => 'not json');
    answer(workerSubjects.list('failing'), () => '{"backends":null,"error":"metadata.json: unexpected end of JSON input"}');
    answer(workerSubjects.delete('failing'), () => '{"error":"internal marshal error"}');
    answer(workerSubjects.list('silent'), () => null);
    // An install whose progress subject also hears events that are not the worker's, or not for this operation.
    answer(workerSubjects.install('noisy'), (body) => {
      const opId = (JSON.parse(body) as { op_id: string }).op_id;
      const progress = workerSubjects.installProgress('noisy', opId);
      worker.publish(progress, 'garbage');
      worker.publish(progress, JSON.stringify({ op_id: 'another', node_id: 'noisy', backend: 'x', percentage: 10 }));
      worker.publish(progress, 'x'.repeat(64 * 1024));
      worker.publish(progress, JSON.stringify({ op_id: opId, node_id: 'noisy', backend: 'x', current: '1.0 KiB', total: '2.0 KiB', percentage: 50, phase: 'downloading' }));
      return JSON.stringify({ success: true, address: '127.0.0.1:50051' });
    });
    await worker.flush();
  });

  after(async () => {
    await nc?.close();
    await worker?.close();
    await nats?.stop();
  });

  test('empty lists as LocalAI sends them', async () => {
    assert.deepEqual(await client.list('empty'), []);
    assert.deepEqual(await client.running('empty'), []);
  });

  test('a reply that is not LocalAI\'s, an error reply, silence and no worker at all each fail with their reason', async () => {
    const fails = (work: Promise<unknown>, reason: WorkerFailure['reason'], message: RegExp) =>
      assert.rejects(work, (error: WorkerFailure) => error instanceof WorkerFailure && error.reason === reason && message.test(error.message));
    await fails(client.list('broken'), 'malformed', /is not LocalAI's/);
    await fails(client.running('broken'), 'malformed', /is not LocalAI's/);
    await fails(client.list('failing'), 'other', /^it says: metadata\.json: unexpected end/);
    await fails(client.delete('failing', 'x'), 'other', /internal marshal error/);
    await fails(client.list('silent'), 'timeout', /did not answer within 1 s/);
    await fails(client.list('nobody'), 'no-responders', /not connected to NATS/);
  });

  test('progress takes only the operation\'s own, well-formed events', async () => {
    const seen: number[] = [];
    await client.install('noisy', { backend: 'x' }, (event) => seen.push(event.percentage));
    assert.deepEqual(seen, [50]);
  });
});
