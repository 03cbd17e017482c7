import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { HangarError } from '../../../shared/errors.ts';
import { serve } from '../install/testdata/fixtures.ts';
import { guardedFetch } from './guarded-fetch.ts';

const quick = guardedFetch(fetch, { headersMs: 400, lowSpeedBytes: 1024, lowSpeedWindowMs: 400 });

async function failsWith(url: string, reason: RegExp, read = false): Promise<void> {
  await assert.rejects(
    (async () => {
      const response = await quick(url);
      if (read) await response.arrayBuffer();
    })(),
    (err: unknown) => {
      assert.ok(err instanceof HangarError, String(err));
      assert.equal(err.message.startsWith(`${url}: `), true, err.message);
      assert.match(err.message, reason);
      return true;
    },
  );
}

async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('guardedFetch', () => {
  it('gives up on a server that never sends its headers', async (t) => {
    const server = await serve(() => undefined);
    t.after(() => server.close());
    await failsWith(`${server.url}/index.yaml`, /no response within 0\.4 s/);
  });

  it('gives up on a body that drips slower than the low-speed limit, but not on a steady one', async (t) => {
    const server = await serve((req, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(req.url === '/steady' ? 4096 : 1, 120);
      const timer = setInterval(() => res.write(chunk), 100);
      setTimeout(() => (clearInterval(timer), res.end()), 1500);
      res.once('close', () => clearInterval(timer));
    });
    t.after(() => server.close());
    await failsWith(`${server.url}/drip`, /stalled: less than 1024 bytes in 0\.4 s/, true);
    const steady = await quick(`${server.url}/steady`);
    assert.ok((await steady.arrayBuffer()).byteLength > 40_000);
    assert.equal(steady.url, `${server.url}/steady`, 'the response keeps its URL');
  });

  it('a connection dropped mid-body is said as such, not left as a bare "terminated" a reader would take for a bad archive', async (t) => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': 1 << 20 });
      res.write(Buffer.alloc(64 * 1024, 120), () => res.socket?.destroy());
    });
    t.after(() => server.close());
    await failsWith(`${server.url}/backend.tar.gz`, /: the download broke off: /, true);
  });

  it('gives up on a drip that dodges the stall rule once its average over the window is under the minimum rate', async (t) => {
    const server = await serve((_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write(Buffer.alloc(1100, 120)), 100);
      res.once('close', () => clearInterval(timer));
    });
    t.after(() => server.close());
    const stallOnly = guardedFetch(fetch, { headersMs: 400, lowSpeedBytes: 1024, lowSpeedWindowMs: 400, minRateBytesPerSec: 0 });
    const body = (await stallOnly(`${server.url}/drip`)).body!.getReader();
    let received = 0;
    for (const started = Date.now(); Date.now() - started < 1500; ) received += (await body.read()).value?.byteLength ?? 0;
    await body.cancel();
    assert.ok(received > 10_000, `the stall rule alone lets the drip run on (${received} bytes in 1.5 s)`);

    const withRate = guardedFetch(fetch, { headersMs: 400, lowSpeedBytes: 1024, lowSpeedWindowMs: 400, minRateBytesPerSec: 16 * 1024, minRateWindowMs: 800 });
    const started = Date.now();
    await assert.rejects(
      (async () => void (await (await withRate(`${server.url}/drip`)).arrayBuffer()))(),
      /\/drip: too slow: \d+(\.\d)? KiB\/s averaged over the last 0\.8 s, under the 16 KiB\/s minimum$/,
    );
    assert.ok(Date.now() - started < 3000, 'given up on soon after one window');
  });

  it('never judges the rate of a body done within the window, nor of a steady fast one', async (t) => {
    const server = await serve((req, res) => {
      res.writeHead(200);
      if (req.url === '/short') {
        res.write(Buffer.alloc(50));
        return void setTimeout(() => res.end(Buffer.alloc(50)), 300); // slow, but done before the 0.5 s window
      }
      const timer = setInterval(() => res.write(Buffer.alloc(8192)), 50);
      setTimeout(() => (clearInterval(timer), res.end()), 1200);
      res.once('close', () => clearInterval(timer));
    });
    t.after(() => server.close());
    const strict = guardedFetch(fetch, { headersMs: 400, lowSpeedBytes: 64, lowSpeedWindowMs: 400, minRateBytesPerSec: 64 * 1024, minRateWindowMs: 500 });
    assert.equal((await (await strict(`${server.url}/short`)).arrayBuffer()).byteLength, 100);
    assert.ok((await (await strict(`${server.url}/steady`)).arrayBuffer()).byteLength > 100_000);
  });

  it('says why a request failed: nothing listening, a blocked port, DNS, TLS, or a redirect to file://', async (t) => {
    const closed = await closedPort();
    await failsWith(`http://127.0.0.1:${closed}/x`, new RegExp(`: nothing listens at 127\\.0\\.0\\.1:${closed} \\(connection refused\\)$`));
    await failsWith('http://127.0.0.1:9/index.yaml', /: fetch never connects to 127\.0\.0\.1:9: the Fetch standard blocks that port$/);
    await failsWith('http://no-such-host.invalid/x', /host not found \(DNS: (ENOTFOUND|EAI_AGAIN)\)/);
    const server = await serve((_req, res) => {
      res.writeHead(302, { location: 'file:///etc/passwd' });
      res.end();
    });
    t.after(() => server.close());
    await failsWith(`${server.url}/moved`, /redirected to a URL that is not http\(s\), which is refused/);
    await failsWith(`${server.url.replace('http:', 'https:')}/x`, /TLS failed \(ERR_SSL_/);
  });

  it('reads an answer whose status line holds control characters, keeping the status and dropping those characters', async (t) => {
    const server = createServer((socket) => {
      socket.once('data', () => socket.end('HTTP/1.1 200 O\x1b[2JK\x07\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok'));
    }).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    t.after(() => server.close());
    const response = await quick(`http://127.0.0.1:${(server.address() as { port: number }).port}/index.yaml`);
    assert.deepEqual([response.status, response.statusText, await response.text()], [200, 'O[2JK', 'ok']);
  });

  it('passes a caller\'s own abort through unchanged', async (t) => {
    const server = await serve(() => undefined);
    t.after(() => server.close());
    const controller = new AbortController();
    const reason = new Error('cancelled by the user');
    setTimeout(() => controller.abort(reason), 50);
    await assert.rejects(quick(server.url, { signal: controller.signal }), (err) => err === reason);
  });
});
