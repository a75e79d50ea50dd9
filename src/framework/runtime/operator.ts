import type { Subscription } from 'rxjs';
import { ApiClient, type RequestCounter } from '../api/api-client.js';
import { loadKubeconfig, type ClusterAccess } from '../api/kubeconfig.js';
import { ObjectApi } from '../api/object-api.js';
import { resourceId, type Resource } from '../api/resource.js';
import { DaemonEngine } from '../engines/daemons.js';
import { TimerEngine } from '../engines/timers.js';
import { ChangeProcessor } from '../handling/change-processor.js';
import { runEventHandlers } from '../handling/event-handlers.js';
import { EventPoster, setEventPoster } from '../posting/events.js';
import { createLogger, type Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { PrometheusMetrics } from '../observability/prometheus-metrics.js';
import { Reactor, stalledForMs, type ObjectBatch, type ProcessResult } from '../reactor/reactor.js';
import type { ChangeHandlerSpec, DaemonSpec, EventHandlerSpec, HandlerSpec, TimerSpec } from '../handler/handler-specs.js';
import { Registry, type HandlerClass } from '../registry/registry.js';
import type { KubeObject } from '../objects/kube-object.js';
import { WatchHealth } from '../watching/watch-health.js';
import { WatchHub, type WatchTuning } from '../watching/watch-hub.js';
import { resolveHandlerResources } from './handler-resolution.js';
import { HealthServer } from './health-server.js';
import { LeaderElector } from './leader-election.js';
import { inNamespaces, isNamespaceGlob } from './namespace-patterns.js';
import { planWatch } from './watch-plan.js';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';

/** Options for {@link createOperator}. */
export interface OperatorOptions {
  /**
   * Cluster access: a client-node `KubeConfig`, or {@link loadKubeconfig}'s result. Default:
   * `loadKubeconfig()` ($KUBECONFIG, ~/.kube/config, then the in-cluster ServiceAccount).
   */
  kubeConfig?: ClusterAccess;
  /** Decorated handler classes (instantiated once each), or instances of them built with options. */
  handlers?: readonly (HandlerClass | object)[];
  /** Handlers registered as plain functions (combined with `handlers`). */
  registry?: Registry;
  /**
   * Namespaces to watch, by name or glob (`team-*`; `*` any run of characters, `?` one); all
   * namespaces when omitted. With a glob, namespaced resources are watched cluster-wide (which needs
   * cluster-wide list/watch) and objects elsewhere are ignored, so matching namespaces created later
   * are served without a restart.
   */
  namespaces?: readonly string[];
  /** At most this many objects are handled at once. Default 64. */
  concurrency?: number;
  /**
   * Default time limit for one handler attempt, in ms: change handlers, `@on.event` handlers and timer
   * runs taking longer have their `signal` aborted, are no longer waited for, and count as a failure
   * (change handlers and timers retry as after any error). Daemons are long-running by design and
   * have none. Default: no limit.
   */
  handlerTimeoutMs?: number;
  logger?: Logger;
  metrics?: Metrics;
  /** Watch timings (idle timeout, page size, backoff); defaults follow client-go. */
  watch?: WatchTuning;
  /** Called after every API request (method, path, status), e.g. to count writes in tests. */
  onRequest?: RequestCounter;
  /**
   * Serve `/healthz`, `/readyz` and `/metrics` on this port (0 picks a free one; see `healthPort`).
   * `stallThresholdMs`: a watch silent for longer makes `/healthz` fail (default 180 s: well past the
   * 70 s idle watchdog plus a reconnect backoff). `handlerStallMs`: work waiting this long for a
   * handler slot while no handler run finishes makes `/healthz` fail, since every slot is held by a
   * hung handler (default 300 s; 0 turns the check off).
   */
  health?: { port: number; host?: string; stallThresholdMs?: number; handlerStallMs?: number };
  /**
   * Run only while holding a `coordination.k8s.io/v1` Lease, so replicas never handle at the same time
   * (defaults 15 s lease, 10 s renew deadline, 2 s retry, as controller-runtime). Losing the Lease
   * stops all work; `stop()` drains, then releases it so a successor takes over at once.
   */
  leaderElection?: {
    namespace: string;
    name: string;
    /** Default: `$POD_NAME` or the host name, plus a random suffix. */
    identity?: string;
    leaseDurationMs?: number;
    renewDeadlineMs?: number;
    retryPeriodMs?: number;
  };
}

/** What the reactor routes with each event: the resource's handlers, change processor and engines. */
interface Route {
  resource: Resource;
  eventHandlers: readonly EventHandlerSpec[];
  changes: ChangeProcessor | undefined;
  timers: TimerEngine | undefined;
  daemons: DaemonEngine | undefined;
}

/** How routes report towards `ready`: handlers resolved, a route's listing started and delivered. */
interface RouteReadiness {
  resolved(specs: readonly HandlerSpec[]): void;
  listing(key: string): void;
  listed(key: string): void;
}

/** The one watch and route of a resolved resource in one namespace scope. */
interface ActiveRoute {
  /** The handlers as registered (before client-side selectors were folded in). */
  handlers: readonly HandlerSpec[];
  route: Route;
  subscription: Subscription;
}

/** Default of `health.handlerStallMs`: far beyond any handler that is merely slow, well before a person notices. */
export const DEFAULT_HANDLER_STALL_MS = 300_000;

const CHANGE_KINDS = new Set<HandlerSpec['kind']>(['create', 'update', 'delete', 'resume']);

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
  private readonly poster: EventPoster;
  private readonly resolutions: Subscription[] = [];
  private readonly engines: Array<TimerEngine | DaemonEngine> = [];
  /**
   * One entry per resolved resource and namespace scope: every handler of an object lives in one
   * route, since the reactor keys objects by uid and a second route would take over its events
   * and its diff-base.
   */
  private readonly routes = new Map<string, ActiveRoute>();
  /** Routes whose handlers cannot be served (route key -> why), reported by /readyz. */
  private readonly brokenRoutes = new Map<string, string>();
  /** Replaced routes still stopping their timers and daemons; `stop()` waits for them. */
  private readonly detaching = new Set<Promise<void>>();
  private readonly watchHealth = new WatchHealth();
  private healthServer: HealthServer | undefined;
  private healthStarting: Promise<number | undefined> | undefined;
  private isReady = false;
  /** The port the health server listens on, once started. */
  healthPort: number | undefined;
  private readonly reactor: Reactor<KubeObject, Route>;
  private markReady: () => void = () => undefined;
  private started = false;
  private working = false;
  private stopping = false;
  private elector: LeaderElector | undefined;
  private markLost: () => void = () => undefined;
  /** Resolves if leadership is lost (work has stopped by then); a CLI exits so it restarts as a candidate. */
  readonly lostLeadership: Promise<void> = new Promise((resolve) => (this.markLost = resolve));

  constructor(private readonly options: OperatorOptions = {}) {
    this.registry = options.registry ?? new Registry();
    for (const handler of options.handlers ?? []) {
      if (typeof handler === 'function') this.registry.addClass(handler as HandlerClass);
      else this.registry.addInstance(handler);
    }
    this.logger = options.logger ?? createLogger();
    this.metrics = options.metrics ?? new PrometheusMetrics();
    const kc = options.kubeConfig ?? loadKubeconfig();
    this.client = new ApiClient(kc);
    this.client.onRequest = options.onRequest;
    this.poster = new EventPoster(this.client, this.logger);
    this.hub = new WatchHub(this.client, { logger: this.logger, metrics: this.metrics, tuning: options.watch, health: this.watchHealth });
    this.reactor = new Reactor<KubeObject, Route>((batch) => this.process(batch), {
      concurrency: options.concurrency,
      logger: this.logger,
      metrics: this.metrics,
    });
    this.ready = new Promise<void>((resolve) => (this.markReady = resolve)).then(() => {
      this.isReady = true;
    });
  }

  /** Starts watching (after winning the Lease, with leader election); returns at once. Await {@link ready} for the initial listings. */
  start(): this {
    if (this.started) return this;
    this.started = true;
    if (this.options.health) {
      this.serveHealth().catch((error: unknown) =>
        this.logger.error({ err: error instanceof Error ? error.message : String(error), port: this.options.health?.port }, 'the health server could not start'),
      );
    }
    const election = this.options.leaderElection;
    if (!election) {
      this.startWork();
      return this;
    }
    const identity = election.identity ?? `${process.env.POD_NAME ?? hostname()}-${randomBytes(3).toString('hex')}`;
    this.elector = new LeaderElector({ ...election, identity, client: this.client, logger: this.logger });
    void this.elector.run({
      onStartedLeading: () => {
        this.logger.info({ identity }, 'leading: starting work');
        this.startWork();
      },
      onStoppedLeading: async () => {
        if (this.stopping) return;
        this.logger.error({ identity }, 'lost leadership: stopping all handlers, timers and daemons');
        await this.stopWork(0);
        this.markLost();
      },
    });
    return this;
  }

  /** True while this operator handles objects (always without leader election; while leading with it). */
  get active(): boolean {
    return this.working;
  }

  private startWork(): void {
    if (this.working || this.stopping) return;
    this.working = true;
    setEventPoster(this.poster);
    const handlers = this.registry.handlers;
    this.brokenRoutes.clear();
    // Ready once every handler's resource is resolved and each of its watches (one per namespace)
    // has delivered its initial listing.
    const unresolved = new Set(handlers);
    const unsynced = new Set<string>();
    const check = (): void => {
      if (unresolved.size === 0 && unsynced.size === 0 && this.brokenRoutes.size === 0) this.markReady();
    };
    const readiness: RouteReadiness = {
      resolved: (specs) => specs.forEach((spec) => unresolved.delete(spec)),
      listing: (key) => unsynced.add(key),
      listed: (key) => {
        unsynced.delete(key);
        check();
      },
    };
    check();
    const resolution = resolveHandlerResources(this.client, handlers, { logger: this.logger }).subscribe(({ resource, handlers: resolved }) =>
      this.attach(resource, resolved, readiness),
    );
    this.resolutions.push(resolution);
    this.logger.info({ handlers: handlers.length }, 'operator started');
  }

  /** Starts (or, when more handlers of an already watched resource resolve late, rebuilds) the resource's watch and route per namespace scope. */
  private attach(resource: Resource, handlers: readonly HandlerSpec[], readiness: RouteReadiness): void {
    readiness.resolved(handlers);
    // A cluster-scoped resource has one collection whatever namespaces were asked for. With a glob
    // among them, one cluster-wide watch filtered per event serves namespaces created later too.
    const patterns = resource.namespaced ? [...new Set(this.options.namespaces ?? [])] : [];
    const globbed = patterns.some(isNamespaceGlob);
    const namespaces = patterns.length > 0 && !globbed ? patterns : [undefined];
    for (const namespace of namespaces) {
      const key = JSON.stringify([resourceId(resource), namespace ?? '']);
      const previous = this.routes.get(key);
      const all = [...(previous?.handlers ?? []), ...handlers];
      let plan;
      try {
        plan = planWatch(all, namespace);
      } catch (error) {
        // A mistake in the handler code: /readyz says so (and `ready` waits) rather than serving part of it.
        const message = `${error instanceof Error ? error.message : String(error)}; ${previous ? 'the new handlers are not run' : `${resourceId(resource)} is not watched`} until the handler code is fixed`;
        this.brokenRoutes.set(key, message);
        this.logger.error({ resource: resourceId(resource) }, message);
        continue;
      }
      const route = this.routeFor(resource, plan.handlers);
      const events = this.hub.watch(resource, plan.scope);
      readiness.listing(key);
      const subscription = this.reactor.consume(globbed ? events.pipe(inNamespaces(patterns)) : events, route, () => readiness.listed(key));
      this.routes.set(key, { handlers: all, route, subscription });
      if (previous) {
        // Rare: another name of this resource was not served a moment ago. The new route has every
        // handler and replays the listing; the old one goes (after the new subscribed, so a shared watch stays open).
        this.logger.warn({ resource: resourceId(resource), namespace }, 'more handlers of a watched resource resolved late: rebuilt its route with all of them');
        const detached = this.detach(key, previous).catch((error: unknown) =>
          this.logger.error({ err: error instanceof Error ? error.message : String(error) }, 'stopping the replaced route failed'),
        );
        this.detaching.add(detached);
        void detached.finally(() => this.detaching.delete(detached));
      }
    }
  }

  /** Stops one route's watch and its timers and daemons. */
  private async detach(key: string, active: ActiveRoute): Promise<void> {
    if (this.routes.get(key) === active) this.routes.delete(key);
    active.subscription.unsubscribe();
    const engines = [active.route.timers, active.route.daemons].filter((e): e is TimerEngine | DaemonEngine => e !== undefined);
    for (const engine of engines) {
      const index = this.engines.indexOf(engine);
      if (index >= 0) this.engines.splice(index, 1);
    }
    await Promise.all(engines.map((engine) => engine.stopAll()));
  }

  /** Starts the health server if configured (once; `start()` does it too); resolves with its port. */
  serveHealth(): Promise<number | undefined> {
    this.healthStarting ??= this.startHealthServer();
    return this.healthStarting;
  }

  private async startHealthServer(): Promise<number | undefined> {
    const options = this.options.health;
    if (!options) return undefined;
    const stallThresholdMs = options.stallThresholdMs ?? 180_000;
    const handlerStallMs = options.handlerStallMs ?? DEFAULT_HANDLER_STALL_MS;
    const metrics = this.metrics;
    this.healthServer = new HealthServer({
      port: options.port,
      host: options.host,
      liveness: [
        {
          name: 'watches',
          check: () => {
            const stalled = this.watchHealth.stalled(stallThresholdMs);
            return stalled.length === 0 ? { ok: true } : { ok: false, reason: `no answer from the API server for over ${stallThresholdMs / 1000} s on ${stalled.join(', ')}` };
          },
        },
        {
          name: 'handlers',
          check: () => {
            if (!(handlerStallMs > 0)) return { ok: true };
            const progress = this.reactor.progress();
            const stalledMs = stalledForMs(progress, Date.now());
            if (stalledMs < handlerStallMs) return { ok: true };
            const limit = this.options.handlerTimeoutMs ? '' : '; a handler timeout (option handlerTimeoutMs, konductor --handler-timeout) abandons hung handlers';
            return {
              ok: false,
              reason: `no handler run has finished for ${Math.round(stalledMs / 1000)} s while ${progress.queued} object(s) wait and ${progress.running} run(s) hold every slot: handlers are hung${limit}`,
            };
          },
        },
      ],
      readiness: [
        {
          name: 'leadership',
          check: () => {
            if (!this.elector) return { ok: true };
            const holder = this.elector.holder;
            return holder === undefined ? { ok: false, reason: 'the Lease has not been read yet' } : { ok: true };
          },
        },
        {
          name: 'listings',
          check: () => {
            // A standby has nothing to list; it is ready to take over.
            if (this.elector && !this.elector.isLeader) return { ok: true };
            if (this.brokenRoutes.size > 0) return { ok: false, reason: [...this.brokenRoutes.values()].join('; ') };
            return this.isReady ? { ok: true } : { ok: false, reason: `waiting for the initial listing of ${this.watchHealth.unsynced().join(', ') || 'resources not yet served'}` };
          },
        },
      ],
      metrics: () =>
        metrics instanceof PrometheusMetrics ? metrics.text() : Promise.reject(new Error('this operator sends metrics to a custom sink')),
      metricsContentType: metrics instanceof PrometheusMetrics ? metrics.registry.contentType : undefined,
    });
    this.healthPort = await this.healthServer.start();
    this.logger.info({ port: this.healthPort }, 'health and metrics server listening');
    return this.healthPort;
  }

  /** Stops watching and drains in-flight work up to `deadlineMs` (default 30 s), then releases the Lease. */
  async stop(deadlineMs = 30_000): Promise<void> {
    this.stopping = true;
    await this.stopWork(deadlineMs);
    // Released only after the drain, so a successor never overlaps with our last handlers.
    await this.elector?.stop();
    await this.healthServer?.stop();
    this.client.close();
    this.logger.info('operator stopped');
  }

  private async stopWork(deadlineMs: number): Promise<void> {
    for (const resolution of this.resolutions) resolution.unsubscribe();
    for (const active of this.routes.values()) active.subscription.unsubscribe();
    this.routes.clear();
    // Timers and daemons stop alongside the drain (replaced routes' too); daemons get their own cancellation timeouts.
    await Promise.all([this.reactor.stop(deadlineMs), ...this.engines.map((engine) => engine.stopAll()), ...this.detaching]);
    await this.poster.flush();
    setEventPoster(undefined);
    this.working = false;
  }

  private routeFor(resource: Resource, handlers: readonly HandlerSpec[]): Route {
    const api = new ObjectApi(this.client, resource);
    const common = { logger: this.logger, poster: this.poster, metrics: this.metrics };
    const timerSpecs = handlers.filter((h): h is TimerSpec => h.kind === 'timer');
    const daemonSpecs = handlers.filter((h): h is DaemonSpec => h.kind === 'daemon');
    const changeSpecs = handlers.filter((h): h is ChangeHandlerSpec => CHANGE_KINDS.has(h.kind));
    const timers = timerSpecs.length > 0 ? new TimerEngine({ api, timers: timerSpecs, ...common, runTimeoutMs: this.options.handlerTimeoutMs }) : undefined;
    const daemons = daemonSpecs.length > 0 ? new DaemonEngine({ resource, client: this.client, daemons: daemonSpecs, ...common }) : undefined;
    if (timers) this.engines.push(timers);
    if (daemons) this.engines.push(daemons);
    const engines = [timers, daemons].filter((e): e is TimerEngine | DaemonEngine => e !== undefined);
    const changes =
      changeSpecs.length > 0 || engines.length > 0
        ? new ChangeProcessor({
            api,
            handlers: changeSpecs,
            ...common,
            attemptTimeoutMs: this.options.handlerTimeoutMs,
            // Timers and daemons hold their objects with the finalizer; deletion waits for them to stop.
            holds: {
              applies: (body) => engines.some((engine) => engine.applies(body)),
              release: async (body) => {
                await Promise.all(engines.map((engine) => engine.stopObject(body.metadata?.uid ?? '')));
              },
            },
          })
        : undefined;
    return { resource, eventHandlers: handlers.filter((h): h is EventHandlerSpec => h.kind === 'event'), changes, timers, daemons };
  }

  private async process(batch: ObjectBatch<KubeObject, Route>): Promise<ProcessResult> {
    const { route, latest } = batch;
    if (route.eventHandlers.length > 0) {
      await runEventHandlers(route.eventHandlers, batch.events, this.logger, batch.signal, this.client, this.metrics, this.options.handlerTimeoutMs);
    }
    const result = await route.changes?.process(batch);
    const uid = latest.object.metadata?.uid ?? '';
    for (const engine of [route.timers, route.daemons]) {
      if (!engine) continue;
      if (latest.type === 'DELETED') void engine.stopObject(uid);
      else engine.observe(latest.object);
    }
    return result;
  }
}

/** Creates an {@link Operator}; call `.start()` to run it. */
export function createOperator(options: OperatorOptions = {}): Operator {
  return new Operator(options);
}
