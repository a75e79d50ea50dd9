import { KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from '../api/api-client.js';
import { runEventHandlers } from '../handling/event-handlers.js';
import { createLogger, type Logger } from '../observability/logger.js';
import { MetricsRecorder, type Metrics } from '../observability/metrics.js';
import { Reactor } from '../reactor/reactor.js';
import type { EventHandlerSpec, HandlerSpec } from '../registry/handler-specs.js';
import { Registry, type HandlerClass } from '../registry/registry.js';
import type { KubeObject } from '../watching/events.js';
import { WatchHub, type WatchScope, type WatchTuning } from '../watching/watch-hub.js';

/** Options for {@link createOperator}. */
export interface OperatorOptions {
  /** Cluster access; default: `KubeConfig.loadFromDefault()` (KUBECONFIG, ~/.kube/config, in-cluster). */
  kubeConfig?: KubeConfig;
  /** Decorated handler classes. */
  handlers?: readonly HandlerClass[];
  /** Handlers registered as plain functions (combined with `handlers`). */
  registry?: Registry;
  /** Namespaces to watch; all namespaces when omitted. */
  namespaces?: readonly string[];
  /** At most this many objects are handled at once. Default 16. */
  concurrency?: number;
  logger?: Logger;
  metrics?: Metrics;
  /** Watch timings (idle timeout, page size, backoff); defaults follow client-go. */
  watch?: WatchTuning;
}

/** What the reactor routes with each event: the handlers for the event's resource. */
interface Route {
  handlers: readonly HandlerSpec[];
}

/**
 * Runs handlers against a cluster: one shared watch per resource and scope, a reactor that
 * handles each object one run at a time, and a clean stop.
 */
export class Operator {
  readonly registry: Registry;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Resolves once every watch has delivered its initial listing. */
  readonly ready: Promise<void>;
  private readonly client: ApiClient;
  private readonly hub: WatchHub;
  private readonly reactor: Reactor<KubeObject, Route>;
  private markReady: () => void = () => undefined;
  private started = false;

  constructor(private readonly options: OperatorOptions = {}) {
    this.registry = options.registry ?? new Registry();
    for (const cls of options.handlers ?? []) this.registry.addClass(cls);
    this.logger = options.logger ?? createLogger();
    this.metrics = options.metrics ?? new MetricsRecorder();
    const kc = options.kubeConfig ?? defaultKubeConfig();
    this.client = new ApiClient(kc);
    this.hub = new WatchHub(this.client, { logger: this.logger, metrics: this.metrics, tuning: options.watch });
    this.reactor = new Reactor<KubeObject, Route>((batch) => this.process(batch.route, batch.events, batch.signal), {
      concurrency: options.concurrency,
      logger: this.logger,
      metrics: this.metrics,
    });
    this.ready = new Promise((resolve) => (this.markReady = resolve));
  }

  /** Starts watching; returns at once. Await {@link ready} for the initial listings. */
  start(): this {
    if (this.started) return this;
    this.started = true;
    const groups = this.watchGroups();
    let pending = groups.length;
    if (pending === 0) this.markReady();
    for (const group of groups) {
      let synced = false;
      this.reactor.consume(this.hub.watchSelector(group.handlers[0]!.resource, group.scope), { handlers: group.handlers }, () => {
        if (!synced && --pending === 0) this.markReady();
        synced = true;
      });
    }
    this.logger.info({ watches: groups.length, handlers: this.registry.handlers.length }, 'operator started');
    return this;
  }

  /** Stops watching and drains in-flight work up to `deadlineMs` (default 30 s). */
  async stop(deadlineMs = 30_000): Promise<void> {
    await this.reactor.stop(deadlineMs);
    this.client.close();
    this.logger.info('operator stopped');
  }

  /** One watch per (resource, namespace, selectors), with the handlers that share it. */
  private watchGroups(): Array<{ scope: WatchScope; handlers: HandlerSpec[] }> {
    const namespaces = this.options.namespaces?.length ? this.options.namespaces : [undefined];
    const groups = new Map<string, { scope: WatchScope; handlers: HandlerSpec[] }>();
    for (const spec of this.registry.handlers) {
      for (const namespace of namespaces) {
        const scope: WatchScope = { namespace, labelSelector: spec.options.labelSelector, fieldSelector: spec.options.fieldSelector };
        const key = JSON.stringify([spec.resource.apiVersion, spec.resource.name.toLowerCase(), scope.namespace, scope.labelSelector, scope.fieldSelector]);
        const group = groups.get(key) ?? { scope, handlers: [] };
        group.handlers.push(spec);
        groups.set(key, group);
      }
    }
    return [...groups.values()];
  }

  private async process(route: Route, events: Parameters<typeof runEventHandlers>[1], signal: AbortSignal): Promise<void> {
    const eventHandlers = route.handlers.filter((h): h is EventHandlerSpec => h.kind === 'event');
    if (eventHandlers.length > 0) await runEventHandlers(eventHandlers, events, this.logger, signal);
  }
}

/** Creates an {@link Operator}; call `.start()` to run it. */
export function createOperator(options: OperatorOptions = {}): Operator {
  return new Operator(options);
}

function defaultKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}
