import { resourceArguments, type Kind } from '../objects/kind.js';
import {
  Agent as HttpAgent,
  request as httpRequest,
  type ClientRequestArgs,
  type IncomingMessage,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest, type RequestOptions } from 'node:https';
import type { Duplex } from 'node:stream';
import { createSecureContext } from 'node:tls';
import type { ClusterAccess } from './kubeconfig.js';
import { ApiError } from './api-error.js';
import {
  BodyReadError,
  readBody,
  readJson,
  readList,
  type Answer,
  type KeptList,
} from './response-body.js';
import { ResourceClient } from './resource-client.js';
import { SpanKind } from '@opentelemetry/api';
import { inSpan, traced } from '../observability/tracing.js';
import { requestShape, type RequestVerb } from './request-shape.js';
import { noMetrics, type Labels, type Metrics } from '../observability/metrics.js';
import type { KubeObject, ResourceObject } from '../objects/kube-object.js';

/** Query parameters; undefined values are left out. */
export type Query = Record<string, string | number | boolean | undefined>;

/** One request's options: query, body, abort signal and timeout. */
export interface RequestInit {
  /** Added to the path as a query string. */
  query?: Query;
  /** Sent JSON-encoded. */
  body?: unknown;
  /** Defaults to `application/json` when a body is given. */
  contentType?: string;
  /** Aborts the request, which then rejects. */
  signal?: AbortSignal;
  /** Whole-request timeout. Default 60 s; watches use their own idle watchdog instead. */
  timeoutMs?: number;
}

/** The verbs that write, and so carry the client's field manager. */
const WRITES = new Set(['PATCH', 'POST', 'PUT']);

/** Whether a request with this verb writes (PATCH, POST, PUT). */
export function isWrite(method: string): boolean {
  return WRITES.has(method);
}
/** The API server refuses a longer `fieldManager`. */
const MAX_FIELD_MANAGER = 128;

/** Options of an {@link ApiClient}. */
export interface ApiClientOptions {
  /** Keep-alive sockets per server. Default 64. */
  maxSockets?: number;
  /**
   * Sent as the `fieldManager` query parameter on every PATCH, POST and PUT that does not set its own,
   * so `metadata.managedFields` says which operator wrote what (at most 128 characters). Default: none
   * (the server derives a manager from the user agent).
   */
  fieldManager?: string;
}

/** Counts of requests by verb, for tests and metrics. */
export interface RequestCounter {
  (method: string, path: string, status: number): void;
}

/**
 * A minimal Kubernetes REST client over node's http(s) with one keep-alive agent.
 * It owns the transport so that watches can be streamed, timed and aborted precisely and
 * so errors carry the server's `Status` and `Retry-After` (client-node's Watch drops both).
 * Authentication and TLS come from the kubeconfig (tokens, client certs, exec plugins).
 */
export class ApiClient {
  private agent: HttpAgent | undefined;
  /** The API server's URL, from the kubeconfig's current cluster. */
  readonly server: string;
  /** Called once per request when its status is known (watches: once the stream opens). */
  onRequest: RequestCounter | undefined;
  /** Where requests are counted by verb and status code. Default: nowhere. */
  metrics: Metrics = noMetrics;
  /** Frozen label sets by `verb code` and by `verb`: a few dozen at most. */
  private readonly labels = new Map<string, Labels>();

  constructor(
    private readonly kc: ClusterAccess,
    options: ApiClientOptions = {},
  ) {
    const cluster = kc.getCurrentCluster();
    if (!cluster)
      throw new Error(
        'the kubeconfig has no current cluster: set a current-context or pass --context',
      );
    const manager = options.fieldManager;
    if (
      manager !== undefined &&
      (manager.length === 0 || manager.length > MAX_FIELD_MANAGER || /[^\x21-\x7e]/.test(manager))
    ) {
      throw new Error(
        `the field manager ${JSON.stringify(manager)} must be 1 to ${MAX_FIELD_MANAGER} printable ASCII characters without spaces`,
      );
    }
    this.server = cluster.server.replace(/\/+$/, '');
    this.maxSockets = options.maxSockets ?? 64;
    this.fieldManager = manager;
  }

  private readonly maxSockets: number;
  /** The `fieldManager` of this client's writes, if it names one. */
  readonly fieldManager: string | undefined;

  /** Sends one request and parses the JSON answer; throws {@link ApiError} for non-2xx or no answer. */
  request<T>(method: string, path: string, init: RequestInit = {}): Promise<T> {
    return this.call(method, path, init, readJson<T>);
  }

  /**
   * GETs a list and parses its `items` one at a time as the body arrives, each kept as `keep` returns
   * it: a listing of many objects never sits in the heap as one string beside its whole parse.
   * Throws {@link ApiError} as {@link request} does.
   */
  list<T>(path: string, init: RequestInit, keep: (item: unknown) => T): Promise<KeptList<T>> {
    return this.call('GET', path, init, (response) => readList(response, keep));
  }

  private async call<T>(
    method: string,
    path: string,
    init: RequestInit,
    read: (response: IncomingMessage) => Promise<Answer<T>>,
  ): Promise<T> {
    const began = performance.now();
    let status: number | undefined;
    try {
      // A span only inside traced work (a run, a tick): lease renewals and listings make none.
      if (!traced())
        return await this.exchange<T>(method, path, init, read, (known) => (status = known));
      const { template } = requestShape(method, path);
      return await inSpan(
        `${method} ${template}`,
        {
          kind: SpanKind.CLIENT,
          attributes: { 'http.request.method': method, 'url.template': template },
        },
        (span) =>
          this.exchange<T>(method, path, init, read, (known, bytes) => {
            status = known;
            span?.setAttribute('http.response.status_code', known);
            span?.setAttribute('http.response.body.size', bytes);
          }),
      );
    } finally {
      if (this.metrics !== noMetrics) this.count(requestShape(method, path).verb, status, began);
    }
  }

  private async exchange<T>(
    method: string,
    path: string,
    init: RequestInit,
    read: (response: IncomingMessage) => Promise<Answer<T>>,
    answered: (status: number, bytes: number) => void,
  ): Promise<T> {
    const response = await this.send(method, path, init);
    const status = response.statusCode ?? 0;
    const what = `${method} ${path}`;
    if (status < 200 || status >= 300) {
      const text = await readBody(response).catch((error: unknown) => {
        throw ApiError.fromNetwork(error instanceof BodyReadError ? error.cause : error, what);
      });
      answered(status, Buffer.byteLength(text));
      this.onRequest?.(method, path, status);
      throw ApiError.fromResponse(status, text, response.headers, what);
    }
    const answer = await read(response).catch((error: unknown) => {
      // A bug in what reads the body surfaces as itself, not as a connection to retry.
      throw error instanceof BodyReadError ? ApiError.fromNetwork(error.cause, what) : error;
    });
    answered(status, answer.bytes);
    this.onRequest?.(method, path, status);
    if (answer.unparsable) {
      const { text, error } = answer.unparsable;
      throw new ApiError(status, `${what}: the response is not JSON`, undefined, undefined, text, {
        cause: error,
      });
    }
    return answer.value;
  }

  /** Opens a streaming GET (a watch); resolves with the response once a 2xx status arrives. */
  async stream(path: string, init: RequestInit = {}): Promise<IncomingMessage> {
    const began = performance.now();
    let response: IncomingMessage;
    try {
      response = await this.send('GET', path, { ...init, timeoutMs: 0 });
    } catch (error) {
      this.count('watch', undefined, began);
      throw error;
    }
    const status = response.statusCode ?? 0;
    this.count('watch', status, began);
    this.onRequest?.('WATCH', path, status);
    if (status >= 200 && status < 300) return response;
    const text = await readBody(response).catch(() => '');
    throw ApiError.fromResponse(status, text, response.headers, `GET ${path}`);
  }

  /** Counts one request in `api_requests_total` and `api_request_duration_seconds`; no status: no answer. */
  private count(verb: RequestVerb, status: number | undefined, began: number): void {
    const code = status === undefined ? 'error' : String(status);
    const key = `${verb} ${code}`;
    let labels = this.labels.get(key);
    if (!labels) this.labels.set(key, (labels = Object.freeze({ verb, code })));
    this.metrics.increment('api_requests_total', labels);
    let verbLabels = this.labels.get(verb);
    if (!verbLabels) this.labels.set(verb, (verbLabels = Object.freeze({ verb })));
    this.metrics.observe?.(
      'api_request_duration_seconds',
      (performance.now() - began) / 1000,
      verbLabels,
    );
  }

  /** Closes idle keep-alive sockets. */
  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
  }

  private async send(method: string, path: string, init: RequestInit): Promise<IncomingMessage> {
    const url = new URL(this.server + path);
    for (const [key, value] of Object.entries(init.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    // URLSearchParams encodes the value; a caller's own manager (server-side apply) wins.
    if (this.fieldManager !== undefined && isWrite(method) && !url.searchParams.has('fieldManager'))
      url.searchParams.set('fieldManager', this.fieldManager);
    const options: RequestOptions = { headers: {} };
    // Re-applied on every request: tokens rotate (in-cluster files, exec plugins).
    await this.kc.applyToHTTPSOptions(options);
    const headers: Record<string, string> = { Accept: 'application/json' };
    for (const [key, value] of Object.entries(options.headers ?? {})) {
      if (value !== undefined)
        headers[key] = Array.isArray(value) ? value.join(', ') : String(value);
    }
    if (options.auth)
      headers.Authorization = `Basic ${Buffer.from(options.auth).toString('base64')}`;
    let payload: string | undefined;
    if (init.body !== undefined) {
      payload = JSON.stringify(init.body);
      headers['Content-Type'] = init.contentType ?? 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(payload));
    }
    const isHttps = url.protocol === 'https:';
    const what = `${method} ${url.pathname}`;
    let agent: HttpAgent;
    try {
      agent = this.agentFor(isHttps, options);
    } catch (error) {
      throw ApiError.fromNetwork(error, what); // TLS material the kubeconfig gave that does not load
    }
    const send = isHttps ? httpsRequest : httpRequest;
    return new Promise<IncomingMessage>((resolve, reject) => {
      const req = send(url, { method, headers, agent, signal: init.signal }, resolve);
      const timeoutMs = init.timeoutMs ?? 60_000;
      if (timeoutMs > 0) {
        req.setTimeout(timeoutMs, () =>
          req.destroy(new Error(`no response within ${timeoutMs} ms`)),
        );
      }
      // `on`, not `once`: a TLS socket torn down mid-write can emit a second error, which must not go unhandled.
      req.on('error', (error) => reject(ApiError.fromNetwork(error, what)));
      req.end(payload);
    });
  }

  private agentFor(isHttps: boolean, tls: RequestOptions): HttpAgent {
    if (!this.agent) {
      const common = { keepAlive: true, maxSockets: this.maxSockets, keepAliveMsecs: 30_000 };
      // One secure context, not its material: the agent keys its socket pool by every TLS option
      // it holds, so a CA, certificate and key as options are turned into one long string per request.
      this.agent = isHttps
        ? new GuardedHttpsAgent({
            ...common,
            secureContext: createSecureContext({
              ca: tls.ca,
              cert: tls.cert,
              key: tls.key,
              pfx: tls.pfx,
              passphrase: tls.passphrase,
            }),
            servername: tls.servername,
            rejectUnauthorized: tls.rejectUnauthorized,
          })
        : new GuardedHttpAgent(common);
    }
    return this.agent;
  }

  /**
   * A typed client for one resource: `apiVersion` is `group/version` (`v1` for the core
   * group), `resource` its plural, kind, singular or short name, resolved by discovery on first use
   * and remembered by this client.
   *
   * @example
   * ```ts
   * const pods = ctx.client.resource(kinds.Pod); // or resource<V1Pod>('v1', 'pods')
   * const pod = await pods.get({ namespace: 'default', name: 'web' });
   * ```
   */
  resource<T extends ResourceObject>(kind: Kind<T>): ResourceClient<T>;
  resource<T extends ResourceObject = KubeObject>(
    apiVersion: string,
    resource: string,
  ): ResourceClient<T>;
  resource<T extends ResourceObject>(
    first: string | Kind<T>,
    resource?: string,
  ): ResourceClient<T> {
    const { resource: selector } = resourceArguments(first, [resource], 'client.resource');
    return new ResourceClient<T>(this, selector.apiVersion, selector.name);
  }
}

/**
 * A TLS socket can report an error when no request listens to it: destroying one whose handshake
 * is still pending fails the queued write with ECANCELED ("Canceled because of SSL destruction"),
 * and a request aborted before it claimed its new socket (watch restarts, stop) never listens at
 * all. Node then emits 'error' on a socket nobody listens to, which would crash the operator. So
 * every socket gets a listener the moment the agent creates it; a request in flight still gets its
 * own error through `req`.
 */
function guardSocket<S extends Duplex | null | undefined>(socket: S): S {
  socket?.on('error', () => undefined);
  return socket;
}

class GuardedHttpsAgent extends HttpsAgent {
  override createConnection(
    options: RequestOptions,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): Duplex | null | undefined {
    return guardSocket(super.createConnection(options, callback));
  }
}

class GuardedHttpAgent extends HttpAgent {
  override createConnection(
    options: ClientRequestArgs,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): Duplex | null | undefined {
    return guardSocket(super.createConnection(options, callback));
  }
}
