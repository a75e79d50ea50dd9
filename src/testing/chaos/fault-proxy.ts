import { readFileSync } from 'node:fs';
import {
  createServer,
  connect as netConnect,
  type AddressInfo,
  type Server,
  type Socket,
} from 'node:net';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import {
  connect as tlsConnect,
  createSecureContext,
  TLSSocket,
  type SecureContext,
} from 'node:tls';
import { KubeConfig } from '@kubernetes/client-node';

/**
 * What the proxy does with traffic; switch at any time with {@link FaultProxy.setMode} or the
 * shorthands. `cut` is not a lasting mode: it resets every open connection and then passes.
 */
export type FaultMode =
  | {
      /** Forward everything. */
      kind: 'pass';
    }
  | {
      /** Answer nothing, new connections or open ones, until the mode changes; nothing is lost. */
      kind: 'blackhole';
    }
  | {
      /** Deliver each chunk late. */
      kind: 'slow';
      /** How late, both ways. */
      delayMs: number;
    }
  | {
      /** Answer every new request with 429 Too Many Requests, without forwarding it. */
      kind: 'throttle';
      /** The `Retry-After` of the 429s. */
      retryAfterSeconds: number;
    };

/** The lasting modes, as named in {@link FaultProxyStats.byMode}. */
export type FaultModeName = FaultMode['kind'];

/** What happened while one mode was on. */
export interface FaultCounts {
  /** Client connections accepted. */
  connections: number;
  /** HTTP requests whose head arrived (on new or already open connections). */
  requests: number;
  /** Requests answered with 429 by the proxy itself. */
  throttled: number;
}

/** Counters since the proxy started; {@link FaultProxy.stats} returns a copy. */
export interface FaultProxyStats {
  /** The mode now. */
  mode: FaultModeName;
  /** Client connections open now, including those held unanswered by a black hole. */
  open: number;
  /** All client connections accepted. */
  connections: number;
  /** All HTTP requests seen. */
  requests: number;
  /** Connections the proxy opened to the upstream server (only when it had a request to forward). */
  upstreamConnections: number;
  /** Client connections reset by {@link FaultProxy.cut} or {@link FaultProxy.resetConnections}. */
  resets: number;
  /** The same counts, split by the mode that was on. */
  byMode: Record<FaultModeName, FaultCounts>;
}

/** One HTTP request the proxy saw. */
export interface ProxiedRequest {
  /** When its head arrived (ms since the epoch). */
  at: number;
  /** The mode when it arrived. */
  mode: FaultModeName;
  /** The HTTP verb. */
  method: string;
  /** Path and query, as sent. */
  path: string;
  /** Sequence number of the client connection it came on. */
  connection: number;
  /** `forwarded` (possibly held by a black hole first) or `throttled` (answered 429 by the proxy). */
  outcome: 'forwarded' | 'throttled';
}

/** Options for {@link FaultProxy.start}. */
export interface FaultProxyOptions {
  /**
   * The identity and cluster to proxy: its current cluster's `server` is the upstream (https), its
   * CA is used to verify the upstream, and {@link FaultProxy.kubeConfig} derives from it.
   */
  kubeConfig: KubeConfig;
  /**
   * PEM certificate (chain) and key the proxy serves, which clients must trust with the
   * kubeconfig's CA and which must be valid for 127.0.0.1 (the API server's own pair works).
   */
  cert: string | Buffer;
  /** The private key of `cert` (PEM). */
  key: string | Buffer;
  /** Listening port; default a free one. */
  port?: number;
  /** How many requests {@link FaultProxy.requests} keeps (oldest dropped). Default 10,000. */
  requestLogLimit?: number;
}

/**
 * The parts of {@link "konductor/testing".TestControlPlane | TestControlPlane} the proxy needs (a
 * shared plane known only by its folder works too).
 */
export interface ProxiedControlPlane {
  /** The plane's folder; the API server's serving pair is in `certs/apiserver.{crt,key}`. */
  dir: string;
  /** The admin identity on the plane. */
  kubeConfig(): KubeConfig;
}

const HOST = '127.0.0.1';
const MAX_HEAD_BYTES = 1 << 20;
/** A lane holding more than this pauses its source (TCP backpressure), e.g. a long black hole. */
const HIGH_WATER = 1 << 20;

/**
 * A loopback proxy between a client (an operator) and a Kubernetes API server that a test switches
 * between faults at runtime, while it counts connections and requests per mode:
 *
 * - `pass`: forward everything;
 * - `cut`: reset (RST) every open connection now, then pass;
 * - `blackhole`: accept new connections and never answer them (not even the TLS handshake); open
 *   connections go silent both ways. Nothing is lost: like TCP after a healed partition, held bytes
 *   and connections proceed once the mode changes, unless their client gave up meanwhile;
 * - `slow`: deliver each chunk, both ways, `delayMs` late (in order);
 * - `throttle`: answer every new request with `429 Too Many Requests` and `Retry-After`, as the API
 *   server's priority and fairness does, without contacting the server. Responses already streaming
 *   (an open watch) continue, as they would with the real server; reset them to force new requests.
 *
 * Throttling needs HTTP, so the proxy terminates TLS: it serves a certificate the client already
 * trusts (for a {@link "konductor/testing".TestControlPlane | TestControlPlane}, the API server's
 * own pair) and opens its own TLS connection upstream, one per client connection, only once a
 * request is to be forwarded. Authentication must be
 * a bearer token (sent in the request, so it passes through); client certificates cannot pass a
 * TLS-terminating proxy. HTTP/1.1 only (offered by ALPN); an upgraded connection passes bytes as is.
 *
 * @example
 * ```ts
 * const proxy = await FaultProxy.forControlPlane(plane);
 * const running = await runOperator({ kubeConfig: proxy.kubeConfig(), handlers: [Widgets] });
 * proxy.blackhole();
 * // ... change objects through plane.kubeConfig(), which does not go through the proxy ...
 * proxy.pass();
 * expect(proxy.stats().byMode.blackhole.connections).toBeLessThanOrEqual(5);
 * ```
 */
export class FaultProxy {
  private modeValue: FaultMode = { kind: 'pass' };
  private readonly connections = new Set<ProxyConnection>();
  /** Raw connections accepted in a black hole: no TLS handshake until the mode changes. */
  private readonly held = new Set<Socket>();
  private readonly counts: Omit<FaultProxyStats, 'mode' | 'open' | 'byMode'> = {
    connections: 0,
    requests: 0,
    upstreamConnections: 0,
    resets: 0,
  };
  private readonly byMode: Record<FaultModeName, FaultCounts> = {
    pass: emptyCounts(),
    blackhole: emptyCounts(),
    slow: emptyCounts(),
    throttle: emptyCounts(),
  };
  private readonly log: ProxiedRequest[] = [];
  private nextConnection = 0;
  private stopped = false;
  private readonly server: Server;

  private constructor(
    private readonly base: KubeConfig,
    /** The API server the proxy forwards to. */
    readonly upstream: URL,
    private readonly secureContext: SecureContext,
    private readonly upstreamTls: {
      ca?: string | Buffer | Array<string | Buffer>;
      rejectUnauthorized: boolean;
    },
    private readonly requestLogLimit: number,
  ) {
    this.server = createServer({ pauseOnConnect: true, allowHalfOpen: true }, (socket) =>
      this.accept(socket),
    );
  }

  /** Base URL clients use, e.g. `https://127.0.0.1:41234`. */
  get url(): string {
    return `https://${HOST}:${(this.server.address() as AddressInfo).port}`;
  }

  /** Starts a proxy for `options.kubeConfig`'s current cluster; resolves once it listens. */
  static async start(options: FaultProxyOptions): Promise<FaultProxy> {
    const cluster = options.kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('FaultProxy: the kubeconfig has no current cluster');
    const upstream = new URL(cluster.server);
    if (upstream.protocol !== 'https:')
      throw new Error(`FaultProxy: the upstream must be https, not ${cluster.server}`);
    const tls: { ca?: string | Buffer | Array<string | Buffer>; rejectUnauthorized?: boolean } = {};
    await options.kubeConfig.applyToHTTPSOptions(
      tls as Parameters<KubeConfig['applyToHTTPSOptions']>[0],
    );
    const secureContext = createSecureContext({ cert: options.cert, key: options.key });
    const proxy = new FaultProxy(
      options.kubeConfig,
      upstream,
      secureContext,
      { ca: tls.ca, rejectUnauthorized: tls.rejectUnauthorized ?? true },
      options.requestLogLimit ?? 10_000,
    );
    await proxy.listen(options.port ?? 0);
    return proxy;
  }

  /**
   * A proxy in front of a {@link "konductor/testing".TestControlPlane | TestControlPlane}'s API
   * server, serving the API server's own certificate and key, so clients keep trusting the plane's
   * CA and only the URL changes.
   */
  static forControlPlane(
    plane: ProxiedControlPlane,
    options: Pick<FaultProxyOptions, 'port' | 'requestLogLimit'> = {},
  ): Promise<FaultProxy> {
    const certs = join(plane.dir, 'certs');
    let cert: Buffer;
    let key: Buffer;
    try {
      cert = readFileSync(join(certs, 'apiserver.crt'));
      key = readFileSync(join(certs, 'apiserver.key'));
    } catch (error) {
      throw new Error(
        `FaultProxy: no API server serving certificate in ${certs} (is the control plane started?)`,
        { cause: error },
      );
    }
    return FaultProxy.start({ ...options, kubeConfig: plane.kubeConfig(), cert, key });
  }

  /** The current mode. */
  get mode(): FaultMode {
    return this.modeValue;
  }

  /** Switches mode; `{ kind: 'cut' }` resets every open connection and then passes. */
  setMode(mode: FaultMode | { kind: 'cut' }): void {
    if (mode.kind === 'cut') {
      this.cut();
      return;
    }
    if (mode.kind === 'slow' && !(mode.delayMs >= 0))
      throw new Error(`FaultProxy: invalid delay ${mode.delayMs}`);
    if (mode.kind === 'throttle' && !(mode.retryAfterSeconds >= 0))
      throw new Error(`FaultProxy: invalid Retry-After ${mode.retryAfterSeconds}`);
    const previous = this.modeValue;
    this.modeValue = { ...mode };
    for (const connection of this.connections) connection.modeChanged();
    if (previous.kind === 'blackhole' && mode.kind !== 'blackhole') {
      const held = [...this.held];
      this.held.clear();
      for (const socket of held) this.open(socket);
    }
  }

  /** Forwards everything. */
  pass(): void {
    this.setMode({ kind: 'pass' });
  }

  /** Accepts and never answers; open connections go silent too. */
  blackhole(): void {
    this.setMode({ kind: 'blackhole' });
  }

  /** Delays every chunk, both ways, by `delayMs`. */
  slow(delayMs: number): void {
    this.setMode({ kind: 'slow', delayMs });
  }

  /** Answers every new request with 429 and `Retry-After: <retryAfterSeconds>`. */
  throttle(retryAfterSeconds: number): void {
    this.setMode({ kind: 'throttle', retryAfterSeconds });
  }

  /** Resets (RST) every open connection, then passes. Returns how many were reset. */
  cut(): number {
    const reset = this.resetConnections();
    this.pass();
    return reset;
  }

  /** Resets (RST) every open connection and keeps the mode. Returns how many were reset. */
  resetConnections(): number {
    let reset = 0;
    for (const socket of this.held) {
      resetSocket(socket);
      reset += 1;
    }
    this.held.clear();
    for (const connection of [...this.connections]) {
      connection.reset();
      reset += 1;
    }
    this.counts.resets += reset;
    return reset;
  }

  /** A copy of the counters. */
  stats(): FaultProxyStats {
    const byMode = Object.fromEntries(
      Object.entries(this.byMode).map(([mode, counts]) => [mode, { ...counts }]),
    ) as Record<FaultModeName, FaultCounts>;
    return {
      mode: this.modeValue.kind,
      open: this.connections.size + this.held.size,
      ...this.counts,
      byMode,
    };
  }

  /** The requests seen so far (the newest `requestLogLimit`), oldest first. */
  get requests(): readonly ProxiedRequest[] {
    return this.log;
  }

  /**
   * `base` (default: the proxied kubeconfig) with every cluster whose server is the upstream pointed
   * at the proxy instead; CA, users and contexts are kept, so any bearer-token identity of the plane
   * (such as a ServiceAccount's) can be routed through the proxy.
   */
  kubeConfig(base: KubeConfig = this.base): KubeConfig {
    const upstream = this.upstream.href.replace(/\/+$/, '');
    const current = base.getCurrentUser();
    if (current && (current.certData || current.certFile)) {
      throw new Error(
        'FaultProxy: client-certificate authentication cannot pass a TLS-terminating proxy; use a bearer token',
      );
    }
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: base.clusters.map((cluster) =>
        cluster.server.replace(/\/+$/, '') === upstream
          ? { ...cluster, server: this.url }
          : cluster,
      ),
      users: base.users,
      contexts: base.contexts,
      currentContext: base.currentContext,
    });
    return kc;
  }

  /** Closes the listener and destroys every connection. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const socket of this.held) socket.destroy();
    this.held.clear();
    for (const connection of [...this.connections]) connection.reset();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // ---- internal, used by ProxyConnection ----

  private listen(port: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, HOST, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
  }

  private accept(socket: Socket): void {
    socket.on('error', () => undefined);
    if (this.stopped) {
      socket.destroy();
      return;
    }
    this.counts.connections += 1;
    this.byMode[this.modeValue.kind].connections += 1;
    if (this.modeValue.kind === 'blackhole') {
      // Accepted by the kernel, never answered: the client's TLS handshake waits for a ServerHello.
      this.held.add(socket);
      return;
    }
    this.open(socket);
  }

  private open(socket: Socket): void {
    if (socket.destroyed) return;
    const connection = new ProxyConnection(this, socket, ++this.nextConnection);
    this.connections.add(connection);
    connection.closed.then(
      () => this.connections.delete(connection),
      () => this.connections.delete(connection),
    );
  }

  /** @internal */
  serverContext(): SecureContext {
    return this.secureContext;
  }

  /** @internal Opens the upstream TLS connection for one client connection. */
  connectUpstream(): { raw: Socket; tls: TLSSocket } {
    this.counts.upstreamConnections += 1;
    const port = Number(this.upstream.port || 443);
    const host = this.upstream.hostname.replace(/^\[|\]$/g, '');
    const raw = netConnect({ host, port });
    raw.on('error', () => undefined);
    const tls = tlsConnect({
      socket: raw,
      host,
      ca: this.upstreamTls.ca,
      rejectUnauthorized: this.upstreamTls.rejectUnauthorized,
      ALPNProtocols: ['http/1.1'],
    });
    return { raw, tls };
  }

  /** @internal Counts a request and says what to do with it. */
  request(connection: number, method: string, path: string): 'forwarded' | 'throttled' {
    const mode = this.modeValue.kind;
    const outcome = mode === 'throttle' ? 'throttled' : 'forwarded';
    this.counts.requests += 1;
    this.byMode[mode].requests += 1;
    if (outcome === 'throttled') this.byMode[mode].throttled += 1;
    this.log.push({ at: Date.now(), mode, method, path, connection, outcome });
    if (this.log.length > this.requestLogLimit)
      this.log.splice(0, this.log.length - this.requestLogLimit);
    return outcome;
  }
}

function emptyCounts(): FaultCounts {
  return { connections: 0, requests: 0, throttled: 0 };
}

/** Sends RST (not FIN) where possible, as a broken network or a crashed peer would. */
function resetSocket(socket: Socket): void {
  try {
    if (!socket.destroyed) socket.resetAndDestroy();
  } catch {
    socket.destroy();
  }
}

/** The 429 the API server's priority and fairness answers with, as raw HTTP/1.1. */
function tooManyRequests(retryAfterSeconds: number, method: string, close: boolean): Buffer {
  const body = JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'Too many requests, please try again later.',
    reason: 'TooManyRequests',
    details: { retryAfterSeconds },
    code: 429,
  });
  const head = [
    'HTTP/1.1 429 Too Many Requests',
    'Content-Type: application/json',
    'Cache-Control: no-cache, private',
    `Retry-After: ${retryAfterSeconds}`,
    `Content-Length: ${Buffer.byteLength(body)}`,
    `Connection: ${close ? 'close' : 'keep-alive'}`,
    `Date: ${new Date().toUTCString()}`,
    '',
    '',
  ].join('\r\n');
  return Buffer.from(method === 'HEAD' ? head : head + body, 'latin1');
}

/**
 * Lane items besides data: end the sink (FIN) or break the connection (RST), in order with the data.
 * @internal
 */
const END = Symbol('end');
/** @internal */
const BREAK = Symbol('break');
/** @internal */
type LaneItem = Buffer | typeof END | typeof BREAK;

/**
 * One direction of a connection: items go out in order, each when the mode allows (at once,
 * `delayMs` after arrival when slow, never while black-holed, so even a peer's reset stays unseen).
 * @internal
 */
class Lane {
  private readonly queue: Array<{ item: LaneItem; due: number }> = [];
  private queuedBytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private draining = false;
  private sourcePaused = false;
  private done = false;

  constructor(
    private readonly mode: () => FaultMode,
    private readonly sink: () => Writable,
    private readonly source: () => Readable | undefined,
    private readonly onBreak: () => void,
  ) {}

  /** Nothing waiting to go out. */
  get empty(): boolean {
    return this.queue.length === 0;
  }

  push(item: LaneItem): void {
    if (this.done) return;
    const mode = this.mode();
    this.queue.push({ item, due: Date.now() + (mode.kind === 'slow' ? mode.delayMs : 0) });
    if (Buffer.isBuffer(item)) this.queuedBytes += item.length;
    if (this.queuedBytes > HIGH_WATER && !this.sourcePaused) {
      this.sourcePaused = true;
      this.source()?.pause();
    }
    this.flush();
  }

  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.done || this.draining || this.mode().kind === 'blackhole') return;
    const now = Date.now();
    while (this.queue.length > 0) {
      const head = this.queue[0] as { item: LaneItem; due: number };
      if (head.due > now) {
        this.timer = setTimeout(() => this.flush(), head.due - now);
        return;
      }
      this.queue.shift();
      if (head.item === BREAK) {
        this.close();
        this.onBreak();
        return;
      }
      const sink = this.sink();
      if (head.item === END) {
        this.done = true;
        sink.end();
        return;
      }
      this.queuedBytes -= head.item.length;
      if (!sink.write(head.item)) {
        this.draining = true;
        sink.once('drain', () => {
          this.draining = false;
          this.flush();
        });
        return;
      }
    }
    if (this.sourcePaused && this.queuedBytes < HIGH_WATER / 2) {
      this.sourcePaused = false;
      this.source()?.resume();
    }
  }

  close(): void {
    this.done = true;
    clearTimeout(this.timer);
    this.queue.length = 0;
  }
}

/** A parsed request head: just what framing and logging need. @internal */
interface RequestHead {
  method: string;
  path: string;
  contentLength: number;
  chunked: boolean;
  upgrade: boolean;
  expectContinue: boolean;
}

function parseHead(text: string): RequestHead {
  const lines = text.split('\r\n');
  const [method = '', path = ''] = (lines[0] ?? '').split(' ');
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers.set(name, headers.has(name) ? `${headers.get(name)}, ${value}` : value);
  }
  const chunked = /(^|,)\s*chunked\s*$/i.test(headers.get('transfer-encoding') ?? '');
  const contentLength = chunked ? 0 : Number(headers.get('content-length') ?? 0);
  if (!Number.isSafeInteger(contentLength) || contentLength < 0)
    throw new Error(`bad Content-Length in ${lines[0]}`);
  const upgrade =
    headers.has('upgrade') && /(^|,)\s*upgrade\s*(,|$)/i.test(headers.get('connection') ?? '');
  const expectContinue = /100-continue/i.test(headers.get('expect') ?? '');
  return { method, path, contentLength, chunked, upgrade, expectContinue };
}

/**
 * One client connection: TLS toward the client, a lazily opened TLS connection upstream, HTTP
 * request framing in between.
 * @internal
 */
class ProxyConnection {
  readonly closed: Promise<void>;
  private readonly client: TLSSocket;
  private upstream: { raw: Socket; tls: TLSSocket } | undefined;
  private readonly up: Lane;
  private readonly down: Lane;
  private buffer: Buffer = Buffer.alloc(0);
  private state: 'head' | 'body' | 'chunk-size' | 'chunk-data' | 'trailer' | 'raw' = 'head';
  private remaining = 0;
  private current: { head: RequestHead; outcome: 'forwarded' | 'throttled' } | undefined;
  private finished = false;
  private markClosed: () => void = () => undefined;

  constructor(
    private readonly proxy: FaultProxy,
    private readonly raw: Socket,
    readonly id: number,
  ) {
    this.closed = new Promise((resolve) => (this.markClosed = resolve));
    const mode = (): FaultMode => proxy.mode;
    this.client = new TLSSocket(raw, {
      isServer: true,
      secureContext: proxy.serverContext(),
      ALPNProtocols: ['http/1.1'],
    });
    this.up = new Lane(
      mode,
      () => this.upstreamSocket(),
      () => this.client,
      () => this.reset(),
    );
    this.down = new Lane(
      mode,
      () => this.client,
      () => this.upstream?.tls,
      () => this.reset(),
    );
    this.client.on('error', () => this.close());
    this.client.on('close', () => this.close());
    this.client.on('end', () => {
      // The client is done sending: pass its FIN on, or, if nothing ever went upstream, finish here.
      if (this.upstream || !this.up.empty) this.up.push(END);
      else this.down.push(END);
    });
    this.client.on('data', (chunk: Buffer) => {
      try {
        this.feed(chunk);
      } catch {
        // Not HTTP we understand: drop the connection rather than guess its framing.
        this.reset();
      }
    });
  }

  modeChanged(): void {
    this.up.flush();
    this.down.flush();
  }

  reset(): void {
    if (this.upstream) resetSocket(this.upstream.raw);
    resetSocket(this.raw);
    this.close();
  }

  private close(): void {
    if (this.finished) return;
    this.finished = true;
    this.up.close();
    this.down.close();
    this.client.destroy();
    this.raw.destroy();
    this.upstream?.tls.destroy();
    this.upstream?.raw.destroy();
    this.markClosed();
  }

  private upstreamSocket(): Writable {
    if (!this.upstream) {
      const upstream = this.proxy.connectUpstream();
      this.upstream = upstream;
      upstream.tls.on('data', (chunk: Buffer) => this.down.push(chunk));
      upstream.tls.on('end', () => this.down.push(END));
      // An unreachable or failing upstream breaks the client's connection, as a TCP proxy would
      // (in order with the data before it, and not while black-holed).
      upstream.tls.on('error', () => this.down.push(BREAK));
      upstream.tls.on('close', () => {
        if (!upstream.tls.readableEnded) this.down.push(BREAK);
      });
    }
    return this.upstream.tls;
  }

  /** Splits the client's bytes into requests, forwarding or answering each by the mode at its start. */
  private feed(chunk: Buffer): void {
    this.buffer = this.buffer.length > 0 ? Buffer.concat([this.buffer, chunk]) : chunk;
    while (this.buffer.length > 0 && !this.finished) {
      switch (this.state) {
        case 'raw':
          this.emit(this.take(this.buffer.length));
          return;
        case 'head': {
          const end = this.buffer.indexOf('\r\n\r\n');
          if (end < 0) {
            if (this.buffer.length > MAX_HEAD_BYTES) throw new Error('request head too large');
            return;
          }
          const bytes = this.take(end + 4);
          const head = parseHead(bytes.toString('latin1'));
          const outcome = this.proxy.request(this.id, head.method, head.path);
          this.current = { head, outcome };
          if (outcome === 'throttled' && head.expectContinue) {
            // The client may hold its body back until told to continue: answer now and close.
            this.respondThrottled(true);
            return;
          }
          this.emit(bytes);
          if (head.upgrade && outcome === 'forwarded') this.state = 'raw';
          else if (head.chunked) this.state = 'chunk-size';
          else if (head.contentLength > 0) {
            this.state = 'body';
            this.remaining = head.contentLength;
          } else this.complete();
          break;
        }
        case 'body':
        case 'chunk-data': {
          this.emit(this.take(Math.min(this.remaining, this.buffer.length)));
          if (this.remaining > 0) return;
          if (this.state === 'body') this.complete();
          else this.state = 'chunk-size';
          break;
        }
        case 'chunk-size':
        case 'trailer': {
          const eol = this.buffer.indexOf('\r\n');
          if (eol < 0) {
            if (this.buffer.length > MAX_HEAD_BYTES) throw new Error('chunk line too long');
            return;
          }
          const line = this.take(eol + 2);
          this.emit(line);
          if (this.state === 'trailer') {
            if (line.length === 2) this.complete();
            break;
          }
          const size = parseInt(line.toString('latin1').split(';')[0] ?? '', 16);
          if (!Number.isSafeInteger(size) || size < 0) throw new Error('bad chunk size');
          if (size === 0) this.state = 'trailer';
          else {
            this.state = 'chunk-data';
            this.remaining = size + 2; // the data and its CRLF
          }
          break;
        }
      }
    }
  }

  private take(length: number): Buffer {
    const bytes = this.buffer.subarray(0, length);
    this.buffer = this.buffer.subarray(length);
    if (this.state === 'body' || this.state === 'chunk-data') this.remaining -= length;
    return bytes;
  }

  private emit(bytes: Buffer): void {
    if (this.state === 'raw' || this.current?.outcome === 'forwarded') this.up.push(bytes);
  }

  private complete(): void {
    this.state = 'head';
    if (this.current?.outcome === 'throttled') this.respondThrottled(false);
    this.current = undefined;
  }

  private respondThrottled(close: boolean): void {
    const mode = this.proxy.mode;
    const retryAfter = mode.kind === 'throttle' ? mode.retryAfterSeconds : 1;
    this.down.push(tooManyRequests(retryAfter, this.current?.head.method ?? 'GET', close));
    if (close) {
      this.down.push(END);
      this.current = undefined;
      this.buffer = Buffer.alloc(0);
      this.client.pause();
    }
  }
}
