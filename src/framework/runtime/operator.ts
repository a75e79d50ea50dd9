import type { Subscription } from 'rxjs';
import { ApiClient } from '../api/api-client.js';
import { loadKubeconfig } from '../api/kubeconfig.js';
import { createLogger, type Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { PrometheusMetrics } from '../observability/prometheus-metrics.js';
import { Identity } from '../state/identity.js';
import { DEFAULT_STORAGE, parseStorage, type Storage } from '../state/storage.js';
import { EventScope } from '../posting/event-scope.js';
import { EventPoster } from '../posting/events.js';
import { Reactor } from '../reactor/reactor.js';
import { Registry, type HandlerClass } from '../registry/registry.js';
import type { KubeObject } from '../objects/kube-object.js';
import { WatchHealth } from '../watching/watch-health.js';
import { WatchHub } from '../watching/watch-hub.js';
import { HealthServer } from './health-server.js';
import { campaignForWork, type Elected } from './operator-election.js';
import { operatorTimings, type OperatorOptions, type OperatorTimings } from './operator-options.js';
import { operatorHealth } from './operator-health.js';
import { ObjectMemos } from '../intents/memo.js';
import { processBatch, type Route, type RouteServices } from './route.js';
import { ownNamespace, servedCollections, ShutdownDeletions } from './shutdown-deletions.js';
import { RouteTable } from './route-table.js';
import { OperatorCache } from './operator-cache.js';
import { runWithCache } from '../intents/cache-scope.js';
import type { Cache, Indexes } from '../intents/cache-contract.js';
import { OperatorActivities } from './operator-activities.js';
import { operatorMemo } from './operator-memo.js';
import { OperatorWebhooks } from './operator-webhooks.js';
import type { WarmStandby } from './warm-standby.js';
import { LiveRing } from './shard-labelling.js';

export { DEFAULT_HANDLER_STALL_MS, type OperatorOptions } from './operator-options.js';

/**
 * Runs handlers against a cluster: one shared watch per resource and scope, a reactor that
 * handles each object one run at a time, and a clean stop.
 */
export class Operator {
  /** The handlers it runs; handlers added before `start()` count. */
  readonly registry: Registry;
  /** Where it reports what it does (`OperatorOptions.metrics`). */
  readonly metrics: Metrics;
  /** The logger it and its handlers log to (`OperatorOptions.logger`). */
  readonly logger: Logger;
  /** Who this operator is on objects: its annotation prefix, finalizer, Lease, Event component and field manager. */
  readonly identity: Identity;
  /** Where the diff-base and handler progress are written (see `OperatorOptions.storage`). */
  readonly storage: Storage;
  /**
   * Resolves once every watch has delivered its initial listing. Rejects when the operator refuses to
   * start: with a {@link HealthServerError} (its health port) or a {@link StartupError}.
   */
  readonly ready: Promise<void>;
  private readonly timings: OperatorTimings;
  private readonly client: ApiClient;
  private readonly leaseClient: ApiClient;
  private readonly hub: WatchHub;
  private readonly poster: EventPoster;
  /** This operator's Events, found by `events.*` and `ctx.events` from the async context of its work. */
  private readonly eventScope: EventScope;
  private readonly services: RouteServices;
  private readonly resolutions: Subscription[] = [];
  private readonly watchHealth = new WatchHealth();
  private readonly table: RouteTable;
  private healthServer: HealthServer | undefined;
  private healthStarting: Promise<number | undefined> | undefined;
  private isReady = false;
  /** The port the health server listens on, once started. */
  healthPort: number | undefined;
  private readonly reactor: Reactor<KubeObject, Route>;
  private markReady: () => void = () => undefined;
  private markFailed: (error: unknown) => void = () => undefined;
  private started = false;
  private working = false;
  private stopping = false;
  private elector: Elected | undefined;
  private warm: WarmStandby | undefined;
  /** With sharding: the live members, as the ring last read them (for labelling new objects). */
  private readonly ring: LiveRing | undefined;
  private markLost: () => void = () => undefined;
  /** Resolves if leadership is lost (work has stopped by then); a CLI exits so it restarts as a candidate. */
  readonly lostLeadership: Promise<void> = new Promise((resolve) => (this.markLost = resolve));
  private readonly reads: OperatorCache;
  /** The read cache handlers get as `ctx.cache`, for use outside handlers. */
  get cache(): Cache {
    return this.reads.cache;
  }
  /** The indexes handlers get as `ctx.indexes`, for use outside handlers. */
  get indexes(): Indexes {
    return this.reads.indexes;
  }
  /** lifecycle: startup, cleanup and probe handlers. */
  private readonly activities: OperatorActivities;
  /** Admission and conversion webhooks, served by every replica. @internal */
  readonly webhooks: OperatorWebhooks;

  constructor(private readonly options: OperatorOptions = {}) {
    // First: a bad identity is a configuration error, reported before anything else is set up.
    this.identity =
      options.identity === undefined ? Identity.DEFAULT : Identity.parse(options.identity);
    this.timings = operatorTimings(options);
    this.storage = options.storage === undefined ? DEFAULT_STORAGE : parseStorage(options.storage);
    this.ring = options.sharding ? new LiveRing() : undefined;
    this.registry = options.registry ?? new Registry();
    for (const handler of options.handlers ?? []) {
      if (typeof handler === 'function') this.registry.addClass(handler as HandlerClass);
      else this.registry.addInstance(handler);
    }
    this.logger = options.logger ?? createLogger();
    this.metrics = options.metrics ?? new PrometheusMetrics();
    const kc = options.kubeConfig ?? loadKubeconfig();
    const { fieldManager } = this.identity;
    // As many sockets as handlers may write at once: a --concurrency above 64 was held to 64 sockets.
    this.client = new ApiClient(kc, {
      fieldManager,
      maxSockets: Math.max(64, options.concurrency ?? 64),
    });
    // Leases on sockets of their own: a renewal must never queue behind 64 handlers' writes.
    this.leaseClient = new ApiClient(kc, { fieldManager, maxSockets: 4 });
    for (const client of [this.client, this.leaseClient]) {
      client.onRequest = options.onRequest;
      client.metrics = this.metrics;
    }
    this.poster = new EventPoster(
      this.client,
      this.logger,
      options.eventSource ?? this.identity.eventComponent,
      { metrics: this.metrics },
    );
    this.eventScope = new EventScope(this.poster);
    this.services = {
      client: this.client,
      logger: this.logger,
      poster: this.poster,
      metrics: this.metrics,
      tracing: options.tracing,
      handlerTimeoutMs: this.timings.handlerTimeoutMs,
      identity: this.identity,
      storage: this.storage,
      memos: new ObjectMemos(operatorMemo(options)), // one per object, copied from the operator memo
    };
    this.hub = new WatchHub(this.client, {
      logger: this.logger,
      metrics: this.metrics,
      tuning: this.timings.watch,
      health: this.watchHealth,
    });
    // Each run enters the scope itself too, whatever async context the reactor happens to call from.
    this.reads = new OperatorCache({
      client: this.client,
      hub: this.hub,
      registry: this.registry,
      logger: this.logger,
      namespaces: options.namespaces,
    });
    this.reactor = new Reactor<KubeObject, Route>(
      (batch) =>
        this.eventScope.run(() =>
          runWithCache(this.reads, () => processBatch(batch, this.services)),
        ),
      {
        concurrency: options.concurrency,
        logger: this.logger,
        metrics: this.metrics,
        tracing: options.tracing,
      },
    );
    this.table = new RouteTable({
      client: this.client,
      hub: this.hub,
      reactor: this.reactor,
      reads: this.reads,
      services: this.services,
      logger: this.logger,
      storage: this.storage,
      namespaces: options.namespaces,
    });
    this.webhooks = new OperatorWebhooks(options.webhooks, {
      client: this.client,
      registry: this.registry,
      identity: this.identity,
      logger: this.logger,
      namespaces: options.namespaces,
      cache: this.reads.cache,
      indexes: this.reads.indexes,
      memo: operatorMemo(options),
      tracing: options.tracing,
      shardRing: this.ring,
    });
    this.activities = new OperatorActivities(() => this.registry.activities, {
      client: this.client,
      logger: this.logger,
      memo: operatorMemo(options),
    });
    this.ready = new Promise<void>((resolve, reject) => {
      this.markReady = resolve;
      this.markFailed = reject;
    }).then(() => {
      this.isReady = true;
    });
  }

  /** Starts watching (after winning the Lease, with leader election); returns at once. Await {@link ready} for the initial listings. */
  start(): this {
    if (this.started) return this;
    this.started = true;
    // Everything started from here (election, watches, reactor, engines, handlers) inherits this operator's Events.
    this.eventScope.run(() => this.startInScope());
    return this;
  }

  private startInScope(): void {
    // Probes and webhooks first: with its health port taken an operator would run unwatched, and
    // without its webhook server it would refuse every admission it is called for; neither starts.
    this.serveHealth()
      .then(() => this.webhooks.start())
      .then(
        () => this.runStartup(),
        (error: unknown) => {
          this.logger.error(error instanceof Error ? error.message : String(error));
          this.markFailed(error);
        },
      );
  }

  /** Startup handlers before anything else (before a leader election campaign too, as Kopf); one failing for good stops the start. */
  private runStartup(): void {
    this.activities.startup().then(
      (completed) => {
        if (completed) this.campaignOrWork();
      },
      (error: unknown) => {
        this.logger.error(
          { handler: (error as { handler?: string }).handler },
          error instanceof Error ? error.message : String(error),
        );
        this.markFailed(error);
      },
    );
  }

  private campaignOrWork(): void {
    if (this.stopping) return;
    if (this.options.leaderElection?.warmStandby && !this.options.sharding)
      this.warm = this.table.standBy(this.registry.handlers);
    this.elector = campaignForWork({
      election: this.options.leaderElection,
      leaseName: this.identity.leaseName,
      timings: this.timings.lease,
      client: this.leaseClient,
      logger: this.logger,
      metrics: this.metrics,
      sharding: this.options.sharding
        ? {
            prefix: this.identity.prefix,
            client: this.client,
            ring: this.ring,
            hub: this.hub,
            table: this.table,
            namespaces: this.options.namespaces,
          }
        : undefined,
      startWork: () => this.startWork(),
      stopWork: async (identity) => {
        if (this.stopping) return;
        this.logger.error(
          { identity },
          'lost leadership: stopping all handlers, timers and daemons',
        );
        await this.stopWork(0);
        this.markLost();
      },
    });
  }

  /** True while this operator handles objects (always without leader election; while leading with it). */
  get active(): boolean {
    return this.working;
  }

  /** Starts the work unless it runs already or the operator is stopping; false when it did not start. */
  private startWork(): boolean {
    if (this.working || this.stopping) return false;
    this.working = true;
    this.eventScope.activate();
    // Handlers start once indexes and cache-only watches have listed (as Kopf's); a warm standby's have.
    const listing = this.warm?.cacheListed ?? this.reads.start();
    void listing.then((listed) => listed && !this.stopping && this.startHandlers());
    return true;
  }

  private startHandlers(): void {
    const handlers = this.registry.handlers;
    this.resolutions.push(this.table.serve(handlers, () => this.markReady()));
    this.logger.info(
      { handlers: handlers.length, identity: this.identity.name, storage: this.storage },
      'operator started',
    );
  }

  /** Starts the health server if configured (once; `start()` does it too); resolves with its port. */
  serveHealth(): Promise<number | undefined> {
    this.healthStarting ??= this.startHealthServer();
    return this.healthStarting;
  }

  private async startHealthServer(): Promise<number | undefined> {
    const options = this.options.health;
    if (!options) return undefined;
    const sources = {
      watchHealth: this.watchHealth,
      progress: () => this.reactor.progress(),
      leadership: () =>
        this.elector
          ? { holderKnown: this.elector.holder !== undefined, leading: this.elector.isLeader }
          : undefined,
      brokenRoutes: () => [...this.table.broken.values()],
      listed: () => this.isReady,
      metrics: this.metrics,
      watchStallMs: this.timings.watchStallMs,
      handlerStallMs: this.timings.handlerStallMs,
      handlerTimeout: this.timings.handlerTimeoutMs !== undefined,
      readinessFirst: [
        { name: 'startup', check: () => this.activities.readiness() },
        { name: 'webhooks', check: () => this.webhooks.readiness() },
      ],
      probes: this.activities.hasProbes ? () => this.activities.probeReport() : undefined,
    };
    this.healthServer = new HealthServer(operatorHealth(sources, options));
    this.healthPort = await this.healthServer.start();
    this.logger.info({ port: this.healthPort }, 'health and metrics server listening');
    return this.healthPort;
  }

  /**
   * Stops within `deadlineMs` (default 30 s; keep it under the pod's termination grace period) and
   * releases the Lease. While objects with the finalizer are being deleted, it first works on until
   * their delete handlers are done (up to 3/5 of the deadline); then it stops watching and drains
   * in-flight work; last (the final fifth, at most 5 s) it releases, logging each, the finalizers of
   * objects no instance will come back for: their namespace, or its own, is being deleted.
   */
  async stop(deadlineMs = 30_000): Promise<void> {
    this.stopping = true;
    this.activities.abort();
    const startedAt = Date.now();
    const collections = servedCollections(this.table.routes, this.options.namespaces);
    const deletions =
      this.working && deadlineMs > 0
        ? new ShutdownDeletions({
            client: this.client,
            identity: this.identity,
            logger: this.logger,
            ownNamespace: ownNamespace(),
            ownObjects: this.elector?.shardSelector,
          })
        : undefined;
    const releaseMs = Math.min(5_000, deadlineMs / 5);
    const survey = await deletions?.finish(collections, Math.max(0, deadlineMs - 2 * releaseMs));
    await this.stopWork(Math.max(0, deadlineMs - (Date.now() - startedAt) - releaseMs));
    if (deletions && ShutdownDeletions.mayRelease(survey))
      await deletions.release(
        collections,
        Math.max(releaseMs, deadlineMs - (Date.now() - startedAt)),
        () => this.webhooks.withdraw(),
      );
    // Cleanup handlers after the drain, within what is left of the deadline, while still holding the Lease.
    await this.activities.cleanup(Math.max(0, deadlineMs - (Date.now() - startedAt)));
    // Released only after the drain, so a successor never overlaps with our last handlers.
    await this.elector?.stop();
    await this.webhooks.stop();
    await this.healthServer?.stop();
    await this.options.tracing?.flush(
      Math.min(5_000, Math.max(1_000, deadlineMs - (Date.now() - startedAt))),
    );
    this.client.close();
    this.leaseClient.close();
    this.logger.info('operator stopped');
  }

  private async stopWork(deadlineMs: number): Promise<void> {
    const startedAt = Date.now();
    for (const resolution of this.resolutions) resolution.unsubscribe();
    this.reads.stop();
    this.warm?.stop();
    // Watches stop at once; timers and daemons (with their own cancellation timeouts) meanwhile.
    const routesStopped = this.table.stop();
    await Promise.all([this.reactor.stop(deadlineMs), routesStopped]);
    await this.poster.flush(Math.max(0, deadlineMs - (Date.now() - startedAt))); // what waits past the deadline is dropped
    // Only this operator's Events stop; another operator in the process keeps posting its own.
    this.eventScope.deactivate();
    this.working = false;
  }
}

/** Creates an {@link Operator}; call `.start()` to run it. */
export function createOperator(options: OperatorOptions = {}): Operator {
  return new Operator(options);
}
