import { SpanKind } from '@opentelemetry/api';
import { noTracing, rootSpan, type SpanStart, type Tracing } from '../observability/tracing.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server, type ServerOptions } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { setLongTimeout } from '../clock/long-timeout.js';
import { describeError } from '../intents/errors.js';
import type { Registry } from '../registry/registry.js';
import { DEFAULT_JSON_LIMITS, type JsonLimits } from './json-bounds.js';
import { BodyRefused, readBody, type BodyLimits, type Held } from './request-body.js';
import { SharedBudget } from './shared-budget.js';
import {
  answerReview,
  webhookRoutes,
  type ReviewScope,
  type WebhookRoute,
} from './webhook-routes.js';

/** A serving certificate and its private key, PEM (the certificate may be followed by its chain). */
export interface ServingCertificate {
  cert: string;
  key: string;
}

/** Options of {@link WebhookServer}: what answering a review needs ({@link ReviewScope}: logger, client, resolver, cache, indexes, operator memo), and where to serve. */
export interface WebhookServerOptions extends ReviewScope {
  /** The handlers served: `registry.admission()` and `registry.conversions()`, read at `start()`. */
  registry: Registry;
  /** 0 picks a free port. */
  port: number;
  /** Traces each review (a SERVER span, its handler's span beneath). Default: off. */
  tracing?: Tracing;
  /** Default 0.0.0.0 (the API server calls in through a Service); tests use 127.0.0.1. */
  host?: string;
  certificate: ServingCertificate;
  /** Largest request body accepted, in bytes; default 8 MiB (a review holds up to a 3 MiB object and the 1.5 MiB one it replaces). Larger: 413. */
  maxBodyBytes?: number;
  /**
   * Most bytes of request bodies held at once, by all requests in flight together; default twice
   * `maxBodyBytes`. A request that would go past it is answered 429 with `Retry-After`, so a flood of
   * large reviews (from the API server or anyone who can reach the port) cannot exhaust the operator's
   * memory; the API server then applies the webhook's `failurePolicy`.
   */
  maxBufferedBytes?: number;
  /**
   * Most of `maxBufferedBytes` that the requests of one remote address hold at once; default half of
   * it, so a client that fills its share leaves the other half to the API server. Past it: 429.
   */
  maxBufferedBytesPerSource?: number;
  /**
   * Most JSON values (objects, arrays, strings, numbers, literals) and nesting of one body, counted
   * as it arrives, before `JSON.parse`; default 300,000 values and 200 levels, which every object
   * the API server stores fits (see `json-bounds.ts`). Past them: 413 (values) or 400 (nesting). The
   * parsed values of the requests in flight are also bounded together: twice `maxValues`, half of
   * that per remote address (429 past it).
   */
  json?: Partial<JsonLimits>;
  /** How long after its headers a request's whole body must have arrived; default 5 s. Later: 408, and the connection is closed. */
  bodyTimeoutMs?: number;
  /**
   * CA certificates (PEM) that sign the API server's client certificate for webhooks. When set, the
   * server asks every caller for a certificate and answers admission requests without one it signs
   * with 403 before reading their body. Conversion requests are not asked: kube-apiserver presents
   * no client certificate to CRD conversion webhooks (only `--admission-control-config-file`'s
   * `kubeConfigFile` gives one, and only to admission webhooks).
   */
  clientCA?: string;
  /**
   * Most connections open at once, and most of them from one remote address; default 256 and a
   * quarter of that. A connection past either is closed at once, so sockets held open by one client
   * (idle, or stalled in the TLS handshake or the headers) cannot exhaust the operator's memory or
   * lock the API server out.
   */
  connections?: { max?: number; perSource?: number };
  /** How long a caller has to finish the TLS handshake; default 5 s (Node's own is 120 s). */
  handshakeTimeoutMs?: number;
}

const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;
const DEFAULT_BODY_TIMEOUT_MS = 5_000;
const DEFAULT_MAX_CONNECTIONS = 256;
const DEFAULT_HANDSHAKE_TIMEOUT_MS = 5_000;
/** Request headers must be complete this soon; the API server sends them at once. */
const HEADERS_TIMEOUT_MS = 10_000;
/** The API server waits at most 30 s for a webhook; a request still incomplete after this is abandoned. */
const REQUEST_TIMEOUT_MS = 35_000;

/**
 * The HTTPS server the API server calls for admission (`/validate/<id>`, `/mutate/<id>`) and
 * conversion (`/convert/<group>/<plural>`). TLS 1.2 or later only; POST of a JSON AdmissionReview
 * or ConversionReview only. Bad requests get a 4xx with a reason (405 not POST, 404 unknown path,
 * 403 an admission caller without a certificate signed by `clientCA` when one is set, 413 too large
 * in bytes or JSON values, 400 not a review or nested too deep, 408 a body not complete in
 * `bodyTimeoutMs`, 429 when the bodies in flight hold `maxBufferedBytes` or the caller's address its
 * share of it) and one debug log line; nothing a client sends can throw out of it, and no body
 * reaches `JSON.parse` before its values are counted. Open connections are bounded in number (all,
 * and per remote address) and in the time their handshake and headers may take.
 * The certificate can be swapped while serving ({@link setCertificate}).
 *
 * @example
 * ```ts
 * const server = new WebhookServer({ registry, port: 9443, certificate: { cert, key }, logger, client, resolve: () => undefined });
 * const port = await server.start();
 * ```
 */
export class WebhookServer {
  private server: Server | undefined;
  private routes = new Map<string, WebhookRoute>();
  private certificate: ServingCertificate;
  private stopping = false;
  private readonly scope: ReviewScope;
  private readonly bytes: SharedBudget;
  private readonly values: SharedBudget;
  private readonly limits: BodyLimits;
  private readonly sockets: SharedBudget;

  constructor(private readonly options: WebhookServerOptions) {
    this.certificate = options.certificate;
    const maxBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    const maxBuffered = options.maxBufferedBytes ?? 2 * maxBytes;
    this.bytes = new SharedBudget(
      maxBuffered,
      options.maxBufferedBytesPerSource ?? Math.floor(maxBuffered / 2),
    );
    const json = { ...DEFAULT_JSON_LIMITS, ...options.json };
    this.values = new SharedBudget(2 * json.maxValues, json.maxValues);
    this.limits = { maxBytes, json, deadlineMs: options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS };
    const maxConnections = options.connections?.max ?? DEFAULT_MAX_CONNECTIONS;
    this.sockets = new SharedBudget(
      maxConnections,
      options.connections?.perSource ?? Math.max(1, Math.floor(maxConnections / 4)),
    );
    const { logger, client, resolve, cache, indexes, memo } = options;
    this.scope = { logger, client, resolve, cache, indexes, memo };
  }

  /** Whether the server is accepting connections. */
  get listening(): boolean {
    return this.server?.listening ?? false;
  }

  /** Starts serving; resolves the bound port. Rejects, saying what to do, when it cannot listen. */
  async start(): Promise<number> {
    if (this.server) throw new Error('the webhook server is already started');
    this.routes = webhookRoutes(this.options.registry);
    const { cert, key } = this.certificate;
    let server: Server;
    try {
      const handshakeTimeout = this.options.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS;
      server = createServer(
        { ...this.tlsOptions(cert, key), handshakeTimeout },
        (request, response) => void this.serve(request, response),
      );
    } catch (error) {
      const what =
        this.options.clientCA === undefined
          ? 'a PEM certificate and its private key'
          : 'a PEM certificate, its private key and PEM client CA certificates';
      throw new Error(
        `the webhook server cannot use its certificate (${describeError(error)}): give ${what}`,
        { cause: error },
      );
    }
    server.requestTimeout = REQUEST_TIMEOUT_MS;
    server.headersTimeout = HEADERS_TIMEOUT_MS;
    server.on('connection', (socket: Socket) => this.admit(socket));
    server.on('tlsClientError', (error) =>
      this.options.logger.debug({ err: error }, 'webhook server: TLS handshake refused'),
    );
    this.server = server;
    const host = this.options.host ?? '0.0.0.0';
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(this.options.port, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (error) {
      this.server = undefined;
      const code = (error as NodeJS.ErrnoException).code;
      throw new Error(
        `the webhook server cannot listen on ${host}:${this.options.port} (${code ?? describeError(error)}); choose another port (0 picks a free one)`,
        { cause: error },
      );
    }
    const port = (server.address() as AddressInfo).port;
    this.options.logger.info({ port, paths: [...this.routes.keys()] }, 'webhook server listening');
    return port;
  }

  /**
   * Serves a new certificate from the next TLS handshake on; connections already open and requests
   * in flight go on with the one they started with, so nothing is dropped or restarted.
   */
  setCertificate(certificate: ServingCertificate): void {
    try {
      this.server?.setSecureContext(this.tlsOptions(certificate.cert, certificate.key));
    } catch (error) {
      throw new Error(
        `the webhook server cannot use the new certificate (${describeError(error)}); it keeps serving the previous one`,
        { cause: error },
      );
    }
    this.certificate = certificate;
  }

  /** Stops accepting connections; resolves once requests in flight are answered (idle connections are closed at once). */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.stopping = true;
    await new Promise<void>((resolve) => {
      // A connection that never goes idle is cut after the longest a request may take.
      const fallback = setLongTimeout(() => server.closeAllConnections(), REQUEST_TIMEOUT_MS);
      server.close(() => {
        fallback.clear();
        resolve();
      });
      server.closeIdleConnections();
    });
    this.server = undefined;
    this.stopping = false;
  }

  /** Counts a new connection against the limits, or closes it at once when it is past one of them. */
  private admit(socket: Socket): void {
    const source = socket.remoteAddress ?? 'unknown';
    if (!this.sockets.take(source, 1)) {
      this.options.logger.debug(
        { source, open: this.sockets.held },
        'webhook server: connection refused, too many open',
      );
      socket.destroy();
      return;
    }
    socket.once('close', () => this.sockets.give(source, 1));
  }

  /** TLS settings: the serving certificate, and with `clientCA` a request for the caller's certificate (checked per request, so a refusal carries a reason). */
  private tlsOptions(cert: string, key: string): ServerOptions {
    const { clientCA } = this.options;
    return {
      cert,
      key,
      minVersion: 'TLSv1.2',
      ...(clientCA === undefined
        ? {}
        : { ca: clientCA, requestCert: true, rejectUnauthorized: false }),
    };
  }

  private async serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const held: Held = { source: request.socket.remoteAddress ?? 'unknown', bytes: 0 };
    let values = 0;
    try {
      if (this.stopping) response.setHeader('Connection', 'close');
      const path = pathOf(request.url);
      if (request.method !== 'POST')
        return this.refuse(request, response, 405, 'only POST is served', { Allow: 'POST' });
      const route = path === undefined ? undefined : this.routes.get(path);
      if (!route)
        return this.refuse(
          request,
          response,
          404,
          `no webhook is served at ${JSON.stringify(path ?? request.url)}`,
        );
      if (
        route.kind === 'admission' &&
        this.options.clientCA !== undefined &&
        !(request.socket as TLSSocket).authorized
      ) {
        return this.refuse(
          request,
          response,
          403,
          'admission reviews are accepted only from a caller with a client certificate signed by the webhook client CA',
          { Connection: 'close' },
        );
      }
      let text: string;
      try {
        const body = await readBody(request, this.limits, this.bytes, held);
        text = body.text;
        if (!this.values.take(held.source, body.values))
          return this.refuse(request, response, 429, 'too many reviews in flight; retry', {
            Connection: 'close',
            'Retry-After': '1',
          });
        values = body.values;
      } catch (error) {
        if (!(error instanceof BodyRefused)) throw error;
        const headers: Record<string, string> =
          error.status === 429
            ? { Connection: 'close', 'Retry-After': '1' }
            : { Connection: 'close' };
        return this.refuse(request, response, error.status, error.reason, headers);
      }
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return this.refuse(request, response, 400, 'the request body is not JSON');
      }
      const answer = await rootSpan(
        this.options.tracing ?? noTracing,
        `${route.kind} ${path}`,
        () => reviewSpan(request, path ?? ''),
        async (span) => {
          const answered = await answerReview(route, body, this.scope);
          span?.setAttribute('http.response.status_code', answered.status);
          return answered;
        },
      );
      if (answer.status !== 200)
        return this.refuse(request, response, answer.status, answer.problem);
      const json = JSON.stringify(answer.body);
      response.writeHead(200, {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(json),
      });
      response.end(json);
    } catch (error) {
      // Reading failed (client gone) or a bug: answer if still possible, never crash the operator.
      this.options.logger.warn({ err: error, path: request.url }, 'webhook request failed');
      if (!response.headersSent && !response.destroyed) {
        response.writeHead(500, {
          'Content-Type': 'text/plain; charset=utf-8',
          Connection: 'close',
        });
        response.end('internal error\n');
      }
    } finally {
      this.bytes.give(held.source, held.bytes);
      this.values.give(held.source, values);
    }
  }

  private refuse(
    request: IncomingMessage,
    response: ServerResponse,
    status: number,
    reason: string,
    headers: Record<string, string> = {},
  ): void {
    this.options.logger.debug(
      { method: request.method, path: request.url, status },
      `webhook request refused: ${reason}`,
    );
    if (response.headersSent || response.destroyed) return;
    response.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', ...headers });
    response.end(`${reason}\n`);
    // An unread body (413, 405) must not be left in the socket.
    if (headers.Connection === 'close') request.resume();
  }
}

/** The path of a request target, without the query the API server adds (`?timeout=10s`); undefined when unreadable. */
function pathOf(url: string | undefined): string | undefined {
  if (url === undefined || !url.startsWith('/')) return undefined;
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * A review's span: its path (bounded by handler ids). A caller's `traceparent` becomes a link, never
 * the parent: whoever can reach the port must not choose our trace ids or force sampling.
 */
function reviewSpan(request: IncomingMessage, path: string): SpanStart {
  const parent = TRACEPARENT.exec(String(request.headers.traceparent ?? ''));
  const links =
    parent && !/^0+$/.test(parent[1]!) && !/^0+$/.test(parent[2]!)
      ? [
          {
            context: {
              traceId: parent[1]!,
              spanId: parent[2]!,
              traceFlags: Number.parseInt(parent[3]!, 16) & 1,
              isRemote: true,
            },
          },
        ]
      : [];
  return {
    kind: SpanKind.SERVER,
    attributes: { 'http.request.method': 'POST', 'url.template': path },
    links,
  };
}
