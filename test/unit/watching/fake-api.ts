/**
 * A scripted Kubernetes API server for watch-stream tests, built on nock.
 *
 * Each call queues the answer to the next list or watch request, in order; every request that
 * reaches an answer is recorded (kind, query, arrival time), and requests nothing was queued for
 * are counted as unmatched. Watch answers are either a finished body of newline-delimited events
 * or a {@link PassThrough} the test writes to, ends or breaks.
 */
import type { ParsedUrlQuery } from 'node:querystring';
import { PassThrough } from 'node:stream';
import { KubeConfig } from '@kubernetes/client-node';
import nock from 'nock';
import type { Observable, Subscription } from 'rxjs';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import type { Resource } from '../../../src/framework/api/resource.js';
import { sleep } from '../../../src/framework/clock/long-timeout.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import type { WatchEvent } from '../../../src/framework/watching/watch-events.js';
import {
  widget as widgetObject,
  WIDGET_API_VERSION,
  widgetResource,
} from '../../support/widget-objects.js';

export const SERVER = 'https://fake.cluster';

/*
 * Importing this module makes the importing test file nock-isolated: no real network while it runs,
 * and node's http and https unpatched after it. Registered on import, not by a call each file must
 * remember: nock patches node's core modules, which every later file in the same jest worker shares,
 * and a file that forgot to restore them routed the integration files after it through nock's
 * interceptor, whose unguarded TLS sockets crashed them (test/support/unpatched-http.ts catches that).
 */
beforeAll(() => nock.disableNetConnect());
afterAll(() => {
  nock.enableNetConnect();
  nock.restore();
});

/** The shared Widget resource (namespaced); listed and watched across all namespaces at {@link WIDGETS_PATH}. */
export const widgets: Resource = widgetResource;
export const WIDGETS_PATH = `/apis/${WIDGET_API_VERSION}/${widgetResource.plural}`;

export function makeClient(): ApiClient {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: SERVER, skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
    currentContext: 'c',
  });
  return new ApiClient(kc);
}

/** The shared Widget fixture named `name` at `resourceVersion`; its UID is derived from the name unless given. */
export function widget(name: string, resourceVersion: string, uid = `uid-${name}`): KubeObject {
  return widgetObject({ name, resourceVersion, uid });
}

/** One line of a watch response. */
export function line(type: string, object: unknown): string {
  return `${JSON.stringify({ type, object })}\n`;
}

/** A Kubernetes `Status` object, as sent in error responses and ERROR watch events. */
export function status(code: number, reason: string, message = reason): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message };
}

export interface SeenRequest {
  kind: 'list' | 'watch';
  query: URLSearchParams;
  /** Date.now() when the request reached the fake server. */
  at: number;
}

type Kind = SeenRequest['kind'];

const isWatch = (query: ParsedUrlQuery): boolean => query.watch === 'true';

export class FakeApi {
  readonly requests: SeenRequest[] = [];
  /** Requests that arrived when nothing was queued for them. */
  unmatched = 0;
  private readonly scope = nock(SERVER);
  private readonly onNoMatch = (): void => {
    this.unmatched += 1;
  };

  constructor(private readonly path = WIDGETS_PATH) {
    this.scope.on('request', (req: { path: string }) => {
      const url = new URL(req.path, SERVER);
      this.requests.push({
        kind: url.searchParams.get('watch') === 'true' ? 'watch' : 'list',
        query: url.searchParams,
        at: Date.now(),
      });
    });
    nock.emitter.on('no match', this.onNoMatch);
  }

  get lists(): SeenRequest[] {
    return this.requests.filter((r) => r.kind === 'list');
  }

  get watches(): SeenRequest[] {
    return this.requests.filter((r) => r.kind === 'watch');
  }

  /** Answers the next list request with one page. */
  listPage(
    items: KubeObject[],
    metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number },
  ): this {
    this.next('list').reply(200, {
      kind: 'WidgetList',
      apiVersion: WIDGET_API_VERSION,
      metadata,
      items,
    });
    return this;
  }

  /** Answers the next list request with an error status. */
  listFails(
    code: number,
    body: unknown = status(code, 'Failure'),
    headers: Record<string, string> = {},
  ): this {
    this.next('list').reply(code, JSON.stringify(body), {
      'Content-Type': 'application/json',
      ...headers,
    });
    return this;
  }

  /** Answers the next watch request with these lines, then ends the response. */
  watchLines(...lines: string[]): this {
    this.next('watch').reply(200, lines.join(''), { 'Content-Type': 'application/json' });
    return this;
  }

  /**
   * Answers the next watch request with a stream the test controls. Note that nock only delivers
   * the response headers together with the first chunk written.
   */
  watchStream(): PassThrough {
    const body = new PassThrough();
    this.next('watch').reply(200, () => body as unknown as nock.ReplyBody, {
      'Content-Type': 'application/json',
    });
    return body;
  }

  /** Answers the next watch request with an error status. */
  watchFails(
    code: number,
    body: unknown = status(code, 'Failure'),
    headers: Record<string, string> = {},
  ): this {
    this.next('watch').reply(code, JSON.stringify(body), {
      'Content-Type': 'application/json',
      ...headers,
    });
    return this;
  }

  /**
   * Fails the next watch request without any response, like a refused connection. (nock 14 only
   * passes Error instances on to the client: a plain `{ code }` object leaves the request hanging.)
   */
  watchNetworkError(code: string): this {
    this.next('watch').replyWithError(
      Object.assign(new Error(`connect ${code} fake.cluster:443`), { code }),
    );
    return this;
  }

  /** Answers queued but not yet asked for. */
  pending(): string[] {
    return this.scope.pendingMocks();
  }

  /** Stops counting unmatched requests; call after each test. */
  dispose(): void {
    nock.emitter.removeListener('no match', this.onNoMatch);
  }

  private next(kind: Kind): nock.Interceptor {
    return this.scope.get(this.path).query((query) => isWatch(query) === (kind === 'watch'));
  }
}

/** Subscribes and keeps every event (and a terminal error, if any) for inspection. */
export class Recorded<T extends KubeObject = KubeObject> {
  readonly events: WatchEvent<T>[] = [];
  error: unknown;
  completed = false;
  private readonly subscription: Subscription;

  constructor(source: Observable<WatchEvent<T>>) {
    this.subscription = source.subscribe({
      next: (event) => this.events.push(event),
      error: (error: unknown) => {
        this.error = error;
      },
      complete: () => {
        this.completed = true;
      },
    });
  }

  /** The events as `TYPE name@resourceVersion`, with ` (list)` for those from a listing. */
  get summary(): string[] {
    return this.events.map(summarize);
  }

  /** How many SYNCED markers arrived. */
  get syncs(): number {
    return this.events.filter((e) => e.type === 'SYNCED').length;
  }

  unsubscribe(): void {
    this.subscription.unsubscribe();
  }
}

export function summarize(event: WatchEvent): string {
  if (event.type === 'SYNCED') return 'SYNCED';
  const { name, resourceVersion } = event.object.metadata ?? {};
  return `${event.type} ${name ?? '?'}@${resourceVersion ?? '?'}${event.fromList ? ' (list)' : ''}`;
}

/**
 * How the watch specs poll with the shared `waitFor` (test/support/wait-for): often, and for up to
 * its default 20 s, which only a hang uses up (a busy machine can take seconds over a big listing).
 */
export const quickly = { intervalMs: 5 } as const;

/** Lets timers and I/O run for a while, to show that something does NOT happen. */
export function settle(ms = 100): Promise<void> {
  return sleep(ms);
}
