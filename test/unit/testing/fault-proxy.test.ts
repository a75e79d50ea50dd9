import { once } from 'node:events';
import { Agent, createServer, request, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import { ApiError } from '../../../src/framework/api/api-error.js';
import { kubeConfigWithToken } from '../../../src/testing/index.js';
import { FaultProxy } from '../../../src/testing/chaos/index.js';
import { waitFor } from '../../support/wait-for.js';

// Real sockets and the proxy's own real-time delays: no fake clock here. Specs wait on conditions,
// and the only time bounds are lower ones, which a busy machine can only make larger.

// A self-signed EC certificate for IP 127.0.0.1, valid 2000–2125. The upstream and the proxy both
// serve it, as the proxy serves a control plane's own API server certificate.
const CERT = `-----BEGIN CERTIFICATE-----
MIIBgTCCASegAwIBAgIBATAKBggqhkjOPQQDAjAUMRIwEAYDVQQDDAkxMjcuMC4w
LjEwIBcNMDAwMTAxMDAwMDAwWhgPMjEyNTAxMDEwMDAwMDBaMBQxEjAQBgNVBAMM
CTEyNy4wLjAuMTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABBLcsyverpdzEceF
YM5pdQCNXTIiDHTsZ5/EOgXDLHyYXmBZPQFrXYoyco3V/F490zu+zJl09RmCZrh3
VG6xG9ujaDBmMA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgKEMBMGA1Ud
JQQMMAoGCCsGAQUFBwMBMA8GA1UdEQQIMAaHBH8AAAEwHQYDVR0OBBYEFCalYUOy
hnjMZKfftXRODM2XUvuSMAoGCCqGSM49BAMCA0gAMEUCIQDxIjeqqit4FAKJup6c
nRHey4gPNl/VDnVOF5kM/DXiNQIgKO6jVuJq7TyEruwOz86ElIrbMSLGlA4UJl23
4OPaGkM=
-----END CERTIFICATE-----
`;
const KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg2DVC40R4f8y7//OH
cSCXV52MkxoUwa0b6ejuEIMEmdyhRANCAAQS3LMr3q6XcxHHhWDOaXUAjV0yIgx0
7GefxDoFwyx8mF5gWT0Ba12KMnKN1fxePdM7vsyZdPUZgma4d1RusRvb
-----END PRIVATE KEY-----
`;
const TOKEN = 'secret-token';

interface Seen {
  method: string;
  url: string;
  auth: string | undefined;
  body: string;
  /** Date.now() when the whole request had arrived. */
  at: number;
}

/** A local https server: `/stream` writes a line every 50 ms; anything else echoes method, path and body. */
async function startUpstream(): Promise<{
  server: Server;
  url: string;
  seen: Seen[];
  connections: () => number;
  close(): Promise<void>;
}> {
  const seen: Seen[] = [];
  let connections = 0;
  const server = createServer({ cert: CERT, key: KEY }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        auth: req.headers.authorization,
        body,
        at: Date.now(),
      });
      if (req.url === '/stream') {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        let n = 0;
        const timer = setInterval(() => res.write(`line ${n++}\n`), 50);
        res.on('close', () => clearInterval(timer));
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ method: req.method, url: req.url, body }));
    });
  });
  server.on('upgrade', (req, socket: Socket) => {
    seen.push({
      method: req.method ?? '',
      url: req.url ?? '',
      auth: req.headers.authorization,
      body: '',
      at: Date.now(),
    });
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n',
    );
    socket.pipe(socket);
  });
  server.on('secureConnection', () => (connections += 1));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    server,
    url,
    seen,
    connections: () => connections,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * Waits until `count` stops changing (the same on two looks 50 ms apart, or more on a busy machine)
 * and returns it: for what is already on its way to land.
 */
async function quiet(count: () => number): Promise<number> {
  let last: number | undefined;
  await waitFor(
    () => {
      const now = count();
      const settled = now === last;
      last = now;
      return settled;
    },
    { what: 'the count to settle', intervalMs: 50 },
  );
  return last!;
}

/** One request through `agent` (keep-alive, trusting CERT); rejects on errors or after `timeoutMs`. */
function send(
  agent: Agent,
  url: string,
  options: {
    method?: string;
    path?: string;
    body?: string;
    chunked?: boolean;
    timeoutMs?: number;
  } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { Authorization: `Bearer ${TOKEN}` };
    if (options.body !== undefined && !options.chunked)
      headers['Content-Length'] = String(Buffer.byteLength(options.body));
    const req = request(
      `${url}${options.path ?? '/hello'}`,
      { method: options.method ?? 'GET', agent, headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString(),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (options.timeoutMs)
      req.setTimeout(options.timeoutMs, () => req.destroy(new Error('no answer in time')));
    if (options.body !== undefined && options.chunked) {
      // Two chunks, so the proxy has to follow chunked framing to find the next request.
      const half = Math.floor(options.body.length / 2);
      req.write(options.body.slice(0, half));
      req.end(options.body.slice(half));
    } else req.end(options.body);
  });
}

/** Opens `/stream` and collects its lines as they arrive. */
async function openStream(
  agent: Agent,
  url: string,
): Promise<{ lines: string[]; error: () => Error | undefined; closed: Promise<void> }> {
  const lines: string[] = [];
  let error: Error | undefined;
  let markClosed: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => (markClosed = resolve));
  await new Promise<void>((resolve, reject) => {
    const req = request(
      `${url}/stream`,
      { agent, headers: { Authorization: `Bearer ${TOKEN}` } },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => lines.push(...chunk.split('\n').filter(Boolean)));
        res.on('error', (e) => (error = e));
        res.on('close', markClosed);
        resolve();
      },
    );
    req.on('error', (e) => {
      error = e;
      markClosed();
      reject(e);
    });
    req.end();
  });
  return { lines, error: () => error, closed };
}

describe('FaultProxy', () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let proxy: FaultProxy;
  let agent: Agent;

  beforeEach(async () => {
    upstream = await startUpstream();
    const kc = kubeConfigWithToken(
      { name: 'test', server: upstream.url, caData: Buffer.from(CERT).toString('base64') },
      'tester',
      TOKEN,
    );
    proxy = await FaultProxy.start({ kubeConfig: kc, cert: CERT, key: KEY });
    agent = new Agent({ keepAlive: true, ca: CERT, maxSockets: 1 });
  });
  afterEach(async () => {
    agent.destroy();
    await proxy.stop();
    await upstream.close();
  });

  test('pass: forwards requests, bodies (sized and chunked) and the bearer token over one kept-alive connection, and counts them', async () => {
    expect((await send(agent, proxy.url)).body).toBe(
      JSON.stringify({ method: 'GET', url: '/hello', body: '' }),
    );
    expect(
      JSON.parse(
        (await send(agent, proxy.url, { method: 'POST', path: '/sized', body: 'a'.repeat(5000) }))
          .body,
      ).body,
    ).toHaveLength(5000);
    expect(
      JSON.parse(
        (
          await send(agent, proxy.url, {
            method: 'PUT',
            path: '/chunked',
            body: 'chunked body',
            chunked: true,
          })
        ).body,
      ).body,
    ).toBe('chunked body');
    expect((await send(agent, proxy.url, { path: '/after?x=1' })).status).toBe(200);

    expect(upstream.seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'GET /hello',
      'POST /sized',
      'PUT /chunked',
      'GET /after?x=1',
    ]);
    expect(upstream.seen.every((s) => s.auth === `Bearer ${TOKEN}`)).toBe(true);
    const stats = proxy.stats();
    expect(stats).toMatchObject({
      mode: 'pass',
      connections: 1,
      requests: 4,
      upstreamConnections: 1,
      resets: 0,
    });
    expect(stats.byMode.pass).toEqual({ connections: 1, requests: 4, throttled: 0 });
    expect(proxy.requests.map((r) => `${r.method} ${r.path} ${r.outcome}`)).toEqual([
      'GET /hello forwarded',
      'POST /sized forwarded',
      'PUT /chunked forwarded',
      'GET /after?x=1 forwarded',
    ]);
  });

  test('throttle: answers every request with 429, Retry-After and a Status, never contacts the upstream, and keeps the connection', async () => {
    proxy.throttle(3);
    const answer = await send(agent, proxy.url, { path: '/apis/x/v1/things?watch=true' });
    expect(answer.status).toBe(429);
    expect(answer.headers['retry-after']).toBe('3');
    expect(JSON.parse(answer.body)).toMatchObject({
      kind: 'Status',
      code: 429,
      reason: 'TooManyRequests',
      details: { retryAfterSeconds: 3 },
    });
    // Bodies are read past (sized and chunked), so the next request on the connection is framed right.
    expect(
      (await send(agent, proxy.url, { method: 'POST', body: 'x'.repeat(70_000) })).status,
    ).toBe(429);
    expect(
      (await send(agent, proxy.url, { method: 'PATCH', body: 'chunks', chunked: true })).status,
    ).toBe(429);
    expect((await send(agent, proxy.url)).status).toBe(429);

    // The framework's client sees the 429 with its Retry-After.
    const client = new ApiClient(proxy.kubeConfig());
    try {
      const error = await client.request('GET', '/api').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ApiError);
      expect(error).toMatchObject({ status: 429, retryAfterSeconds: 3, reason: 'TooManyRequests' });
    } finally {
      client.close();
    }

    expect(upstream.seen).toEqual([]);
    expect(upstream.connections()).toBe(0);
    const stats = proxy.stats();
    expect(stats).toMatchObject({
      mode: 'throttle',
      connections: 2,
      requests: 5,
      upstreamConnections: 0,
    });
    expect(stats.byMode.throttle).toEqual({ connections: 2, requests: 5, throttled: 5 });
    expect(proxy.requests.every((r) => r.outcome === 'throttled' && r.mode === 'throttle')).toBe(
      true,
    );

    proxy.pass();
    expect((await send(agent, proxy.url)).status).toBe(200);
  });

  test('throttle: a watch already streaming goes on; new requests get 429', async () => {
    const stream = await openStream(agent, proxy.url);
    const other = new Agent({ keepAlive: true, ca: CERT });
    try {
      proxy.throttle(1);
      const before = stream.lines.length;
      expect((await send(other, proxy.url)).status).toBe(429);
      await waitFor(() => stream.lines.length > before + 2, {
        what: 'three more lines on the streaming watch',
      });
    } finally {
      other.destroy();
    }
  });

  test('slow: delays each chunk both ways', async () => {
    await send(agent, proxy.url); // connect first: the handshake is not what is measured
    proxy.slow(150);
    const sentAt = Date.now();
    expect((await send(agent, proxy.url)).status).toBe(200);
    const answeredAt = Date.now();
    // Each way on its own, so neither delay can stand in for the other.
    const reachedAt = upstream.seen.at(-1)!.at;
    expect(reachedAt - sentAt).toBeGreaterThanOrEqual(150); // the request
    expect(answeredAt - reachedAt).toBeGreaterThanOrEqual(150); // the response
    expect(proxy.stats().byMode.slow.requests).toBe(1);
  });

  test('blackhole: new connections are accepted but never answered, open ones go silent both ways; all resume on pass', async () => {
    const stream = await openStream(agent, proxy.url);
    const idle = new Agent({ keepAlive: true, ca: CERT, maxSockets: 1 });
    const fresh = new Agent({ keepAlive: true, ca: CERT });
    try {
      await send(idle, proxy.url); // an idle kept-alive connection, opened before the hole
      await waitFor(() => stream.lines.length >= 2, { what: 'the stream to flow' });
      proxy.blackhole();
      const silentFrom = await quiet(() => stream.lines.length); // lines on their way may still land

      // A new connection: TCP is accepted, the TLS handshake never completes.
      await expect(send(fresh, proxy.url, { timeoutMs: 400 })).rejects.toThrow('no answer in time');
      // A request on the idle connection: read and counted, never answered while the hole lasts.
      const onIdle = send(idle, proxy.url, { path: '/during' });
      // A new connection that waits out the hole.
      const waiting = send(fresh, proxy.url, { path: '/waited' });
      await waitFor(
        () => {
          const { connections, requests } = proxy.stats().byMode.blackhole;
          return connections >= 2 && requests >= 1;
        },
        { what: 'the waiting connection and the request on the idle one to arrive' },
      );
      await sleep(200); // a window for anything the hole lets through to show
      expect(stream.lines.length).toBe(silentFrom);
      expect(upstream.seen.map((s) => s.url)).not.toContain('/during');
      expect(proxy.stats().byMode.blackhole).toEqual({ connections: 2, requests: 1, throttled: 0 });

      proxy.pass();
      expect((await onIdle).status).toBe(200);
      expect((await waiting).status).toBe(200);
      await waitFor(() => stream.lines.length > silentFrom, { what: 'the held lines' });
      // Held lines arrive in order, none lost.
      expect(stream.lines).toEqual(stream.lines.map((_, i) => `line ${i}`));
      // /stream and /hello before the hole; /waited came on a connection accepted in the hole but spoke after it.
      expect(proxy.stats().byMode.pass.requests).toBe(3);
    } finally {
      idle.destroy();
      fresh.destroy();
    }
  });

  test('cut: resets every open connection (ECONNRESET), then passes', async () => {
    const stream = await openStream(agent, proxy.url);
    await waitFor(() => stream.lines.length >= 1, { what: 'the stream to flow' });
    proxy.throttle(1);
    expect(proxy.cut()).toBe(1);
    await stream.closed;
    expect(stream.error()).toMatchObject({ code: 'ECONNRESET' });
    expect(proxy.mode).toEqual({ kind: 'pass' });
    expect((await send(agent, proxy.url)).status).toBe(200);
    expect(proxy.stats()).toMatchObject({ resets: 1, connections: 2, open: 1 });
  });

  test('resetConnections keeps the mode', async () => {
    await send(agent, proxy.url);
    proxy.throttle(2);
    expect(proxy.resetConnections()).toBe(1);
    await waitFor(() => Object.values(agent.freeSockets).every((free) => !free?.length), {
      what: 'the agent to drop its reset connection',
    });
    expect(proxy.mode).toEqual({ kind: 'throttle', retryAfterSeconds: 2 });
    expect((await send(agent, proxy.url)).status).toBe(429);
  });

  test('an upgraded connection passes bytes both ways', async () => {
    const socket = await new Promise<Socket>((resolve, reject) => {
      const req = request(`${proxy.url}/exec`, {
        agent: false,
        ca: CERT,
        headers: { Connection: 'Upgrade', Upgrade: 'echo', Authorization: `Bearer ${TOKEN}` },
      });
      req.on('upgrade', (_res, s: Socket) => resolve(s));
      req.on('error', reject);
      req.end();
    });
    socket.write('ping');
    const [echo] = (await once(socket, 'data')) as [Buffer];
    expect(echo.toString()).toBe('ping');
    socket.destroy();
    expect(upstream.seen.map((s) => `${s.method} ${s.url}`)).toEqual(['GET /exec']);
  });

  test('an unreachable upstream breaks the client connection instead of hanging it', async () => {
    await upstream.close();
    await expect(send(agent, proxy.url, { timeoutMs: 5_000 })).rejects.toThrow(
      /socket hang up|ECONNRESET/,
    );
  });

  test('kubeConfig() points the identity at the proxy and keeps the CA and token', async () => {
    const kc = proxy.kubeConfig();
    expect(kc.getCurrentCluster()?.server).toBe(proxy.url);
    expect(kc.getCurrentCluster()?.caData).toBe(Buffer.from(CERT).toString('base64'));
    expect(kc.getCurrentUser()?.token).toBe(TOKEN);
    const withCert = new KubeConfig();
    withCert.loadFromOptions({
      clusters: [{ name: 'test', server: upstream.url, skipTLSVerify: false }],
      users: [{ name: 'x', certData: 'abc', keyData: 'def' }],
      contexts: [{ name: 'test', cluster: 'test', user: 'x' }],
      currentContext: 'test',
    });
    expect(() => proxy.kubeConfig(withCert)).toThrow('client-certificate');
  });
});
