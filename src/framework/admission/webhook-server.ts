import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { setLongTimeout } from '../clock/long-timeout.js';
import { describeError } from '../handler/errors.js';
import type { Registry } from '../registry/registry.js';
import { answerReview, webhookRoutes, type ReviewScope, type WebhookRoute } from './webhook-routes.js';

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
  /** Default 0.0.0.0 (the API server calls in through a Service); tests use 127.0.0.1. */
  host?: string;
  certificate: ServingCertificate;
  /** Largest request body accepted, in bytes; default 8 MiB (a review holds up to two 3 MiB objects). Larger: 413. */
  maxBodyBytes?: number;
  /**
   * Most bytes of request bodies held at once, by all requests in flight together; default twice
   * `maxBodyBytes`. A request that would go past it is answered 429 with `Retry-After`, so a flood of
   * large reviews (from the API server or anyone who can reach the port) cannot exhaust the operator's
   * memory; the API server then applies the webhook's `failurePolicy`.
   */
  maxBufferedBytes?: number;
}

const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;
/** The API server waits at most 30 s for a webhook; a request still incomplete after this is abandoned. */
const REQUEST_TIMEOUT_MS = 35_000;

class BodyTooLarge extends Error {}
class ServerBusy extends Error {}

/** The bytes all requests in flight hold; each request takes its body's size and gives it back once answered. */
class ByteBudget {
  private used = 0;

  constructor(private readonly limit: number) {}

  /** Takes `bytes` when they fit; false (taking nothing) when they would go past the limit. */
  take(bytes: number): boolean {
    if (this.used + bytes > this.limit) return false;
    this.used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.used -= bytes;
  }
}

/** What one request has taken from the budget, given back when it is answered. */
interface Held {
  bytes: number;
}

/**
 * The request body, up to `limit` bytes, each chunk taken from `budget` (recorded in `held`); rejects
 * with {@link BodyTooLarge} past the limit, or {@link ServerBusy} when the budget has no room.
 */
function readBody(request: IncomingMessage, limit: number, budget: ByteBudget, held: Held): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      reject(new BodyTooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        request.removeAllListeners('data');
        reject(new BodyTooLarge());
      } else if (!budget.take(chunk.length)) {
        request.removeAllListeners('data');
        reject(new ServerBusy());
      } else {
        held.bytes += chunk.length;
        chunks.push(chunk);
      }
    });
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

/**
 * The HTTPS server the API server calls for admission (`/validate/<id>`, `/mutate/<id>`) and
 * conversion (`/convert/<group>/<plural>`). TLS 1.2 or later only; POST of a JSON AdmissionReview
 * or ConversionReview only. Bad requests get a 4xx with a reason (405 not POST, 404 unknown path,
 * 413 too large, 400 not a review, 429 when the bodies in flight hold `maxBufferedBytes`) and one
 * debug log line; nothing a client sends can throw out of it.
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
  private readonly budget: ByteBudget;

  constructor(private readonly options: WebhookServerOptions) {
    this.certificate = options.certificate;
    this.budget = new ByteBudget(options.maxBufferedBytes ?? 2 * (options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES));
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
      server = createServer({ cert, key, minVersion: 'TLSv1.2' }, (request, response) => void this.serve(request, response));
    } catch (error) {
      throw new Error(`the webhook server cannot use its certificate (${describeError(error)}): give a PEM certificate and its private key`, { cause: error });
    }
    server.requestTimeout = REQUEST_TIMEOUT_MS;
    server.on('tlsClientError', (error) => this.options.logger.debug({ err: error }, 'webhook server: TLS handshake refused'));
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
      throw new Error(`the webhook server cannot listen on ${host}:${this.options.port} (${code ?? describeError(error)}); choose another port (0 picks a free one)`, { cause: error });
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
      this.server?.setSecureContext({ cert: certificate.cert, key: certificate.key, minVersion: 'TLSv1.2' });
    } catch (error) {
      throw new Error(`the webhook server cannot use the new certificate (${describeError(error)}); it keeps serving the previous one`, { cause: error });
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

  private async serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const held: Held = { bytes: 0 };
    try {
      if (this.stopping) response.setHeader('Connection', 'close');
      const path = pathOf(request.url);
      if (request.method !== 'POST') return this.refuse(request, response, 405, 'only POST is served', { Allow: 'POST' });
      const route = path === undefined ? undefined : this.routes.get(path);
      if (!route) return this.refuse(request, response, 404, `no webhook is served at ${JSON.stringify(path ?? request.url)}`);
      let text: string;
      try {
        text = (await readBody(request, this.options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, this.budget, held)).toString('utf8');
      } catch (error) {
        if (error instanceof BodyTooLarge) return this.refuse(request, response, 413, 'the request body is too large', { Connection: 'close' });
        if (error instanceof ServerBusy) return this.refuse(request, response, 429, 'too many reviews in flight; retry', { Connection: 'close', 'Retry-After': '1' });
        throw error;
      }
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return this.refuse(request, response, 400, 'the request body is not JSON');
      }
      const answer = await answerReview(route, body, this.scope);
      if (answer.status !== 200) return this.refuse(request, response, answer.status, answer.problem);
      const json = JSON.stringify(answer.body);
      response.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(json) });
      response.end(json);
    } catch (error) {
      // Reading failed (client gone) or a bug: answer if still possible, never crash the operator.
      this.options.logger.warn({ err: error, path: request.url }, 'webhook request failed');
      if (!response.headersSent && !response.destroyed) {
        response.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8', Connection: 'close' });
        response.end('internal error\n');
      }
    } finally {
      this.budget.give(held.bytes);
    }
  }

  private refuse(request: IncomingMessage, response: ServerResponse, status: number, reason: string, headers: Record<string, string> = {}): void {
    this.options.logger.debug({ method: request.method, path: request.url, status }, `webhook request refused: ${reason}`);
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
