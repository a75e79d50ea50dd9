import type { Tracing } from '../observability/tracing.js';
import type { Subscription } from 'rxjs';
import type { WatchScope } from '../watching/watch-hub.js';
import type { ApiClient } from '../api/api-client.js';
import { ObjectApi } from '../api/object-api.js';
import type { Resource } from '../api/resource.js';
import { DaemonEngine } from '../engines/daemons.js';
import { TimerEngine } from '../engines/timers.js';
import type {
  ChangeHandlerSpec,
  DaemonSpec,
  EventHandlerSpec,
  HandlerSpec,
  TimerSpec,
} from '../intents/handler-specs.js';
import { ChangeProcessor } from '../processing/change-processor.js';
import { runEventHandlers } from '../processing/event-handlers.js';
import { OwnedProcessor } from '../processing/owned-processor.js';
import { ReconcileProcessor } from '../processing/reconcile-processor.js';
import type { ReconcileSpec } from '../intents/reconcile-specs.js';
import type { OwnedSpec } from '../intents/owned-specs.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { EventPoster } from '../posting/events.js';
import type { ObjectBatch, ProcessResult } from '../reactor/reactor.js';
import type { Identity } from '../state/identity.js';
import type { ObjectMemos } from '../intents/memo.js';
import type { Storage } from '../state/storage.js';
import { CHANGE_REASONS } from '../state/progress.js';
import type { ShardMember } from '../sharding/shard-member.js';

/** What the reactor routes with each event: the resource's handlers, change processor and engines. */
export interface Route {
  resource: Resource;
  eventHandlers: readonly EventHandlerSpec[];
  changes: ChangeProcessor | undefined;
  timers: TimerEngine | undefined;
  daemons: DaemonEngine | undefined;
  owned?: OwnedProcessor;
  /** The resource's `@on.reconcile` handler, if it has one. */
  reconcile?: ReconcileProcessor;
}

/** How routes report towards `ready`: handlers resolved, a route's listing started and delivered. */
export interface RouteReadiness {
  resolved(specs: readonly HandlerSpec[]): void;
  listing(key: string): void;
  listed(key: string): void;
}

/** The one watch and route of a resolved resource in one namespace scope. */
export interface ActiveRoute {
  /** The handlers as registered (before client-side selectors were folded in). */
  handlers: readonly HandlerSpec[];
  route: Route;
  subscription: Subscription;
  /** What its watch selects (with sharding, this replica's objects only). */
  scope: WatchScope;
  /** What it would select without sharding, and the namespace filter its events pass through. */
  unsharded: { scope: WatchScope; globs: string[] | undefined };
  /**
   * With sharding, while this replica is an heir: a watch of each departed member's objects, by
   * selector, and whether it has listed them.
   */
  inherited: Map<string, { scope: WatchScope; subscription: Subscription; listed: boolean }>;
}

/** What every route of an operator shares. */
export interface RouteServices {
  client: ApiClient;
  logger: Logger;
  poster: EventPoster;
  metrics: Metrics;
  /** Traces timer ticks and daemon iterations (object runs are traced by the reactor). */
  tracing?: Tracing;
  handlerTimeoutMs: number | undefined;
  /** The operator's identity: the keys and finalizer of its bookkeeping. */
  identity: Identity;
  /** Where bookkeeping is written (resources without a status subresource use annotations). */
  storage: Storage;
  /** memo: the operator's per-object memos, shared by every handler of an object. */
  memos?: ObjectMemos;
  /** With sharding: this replica's membership, which objects it handles and how it hands them on. */
  shard?: ShardMember;
}

/** How long a drained object whose release failed waits before the next try. */
const RELEASE_RETRY_MS = 5_000;

const CHANGE_KINDS: ReadonlySet<HandlerSpec['kind']> = new Set(CHANGE_REASONS);

/** The route of one resource's handlers: a change processor when anything needs one, and a timer and a daemon engine when it has some. */
export function buildRoute(
  resource: Resource,
  handlers: readonly HandlerSpec[],
  services: RouteServices,
): Route {
  const { client, handlerTimeoutMs, identity } = services;
  const api = new ObjectApi(client, resource);
  const common = {
    logger: services.logger,
    poster: services.poster,
    metrics: services.metrics,
    tracing: services.tracing,
    memos: services.memos,
  };
  const timerSpecs = handlers.filter((h): h is TimerSpec => h.kind === 'timer');
  const daemonSpecs = handlers.filter((h): h is DaemonSpec => h.kind === 'daemon');
  const changeSpecs = handlers.filter((h): h is ChangeHandlerSpec => CHANGE_KINDS.has(h.kind));
  const timers =
    timerSpecs.length > 0
      ? new TimerEngine({
          api,
          timers: timerSpecs,
          ...common,
          runTimeoutMs: handlerTimeoutMs,
          identity,
        })
      : undefined;
  const daemons =
    daemonSpecs.length > 0
      ? new DaemonEngine({ resource, client, daemons: daemonSpecs, ...common })
      : undefined;
  const engines = routeEngines({ timers, daemons });
  const reconcileSpecs = handlers.filter((h): h is ReconcileSpec => h.kind === 'reconcile');
  const reconcile =
    reconcileSpecs[0] &&
    new ReconcileProcessor({
      api,
      handler: reconcileSpecs[0],
      ...common,
      attemptTimeoutMs: handlerTimeoutMs,
      identity,
    });
  // The last run of a deleted object has no operator signal to follow: the handler timeout bounds it.
  const lastRuns = new AbortController().signal;
  const changes =
    changeSpecs.length > 0 || engines.length > 0 || reconcile
      ? new ChangeProcessor({
          api,
          handlers: changeSpecs,
          ...common,
          attemptTimeoutMs: handlerTimeoutMs,
          identity,
          storage: services.storage,
          // Timers and daemons hold their objects with the finalizer; deletion waits for them to stop.
          // So does a reconcile, for its last run.
          holds: {
            applies: (body) =>
              engines.some((engine) => engine.applies(body)) || (reconcile?.applies(body) ?? false),
            release: async (body) => {
              await Promise.all(
                engines.map((engine) => engine.stopObject(body.metadata?.uid ?? '')),
              );
              await reconcile?.finalize(body, lastRuns);
            },
          },
        })
      : undefined;
  const ownedSpecs = handlers.filter((h): h is OwnedSpec => h.kind === 'owned');
  const owned =
    ownedSpecs.length > 0
      ? new OwnedProcessor({
          api,
          handlers: ownedSpecs,
          ...common,
          attemptTimeoutMs: handlerTimeoutMs,
          identity,
        })
      : undefined;
  return {
    resource,
    eventHandlers: handlers.filter((h): h is EventHandlerSpec => h.kind === 'event'),
    changes,
    timers,
    daemons,
    owned,
    reconcile,
  };
}

/** A route's timer and daemon engines (those it has). */
export function routeEngines(
  route: Pick<Route, 'timers' | 'daemons'>,
): Array<TimerEngine | DaemonEngine> {
  return [route.timers, route.daemons].filter(
    (e): e is TimerEngine | DaemonEngine => e !== undefined,
  );
}

/** One reactor run for an object: its event handlers, then its change, owned and reconcile handlers, then its timers and daemons see the newest state. */
export async function processBatch(
  batch: ObjectBatch<KubeObject, Route>,
  services: RouteServices,
): Promise<ProcessResult> {
  if (services.shard) {
    // A retry or a wake-up has no events: it acts on the object's latest copy, already judged.
    if (batch.events.length > 0) {
      const events = services.shard.eventsToActOn(batch.events);
      if (!events) return undefined;
      if (events.length !== batch.events.length)
        batch = { ...batch, events, latest: events.at(-1)! };
    }
    const { route, latest } = batch;
    const verdict = await services.shard.verdict(route.resource, latest.type, latest.object);
    if (verdict === 'skip') return undefined;
    if (verdict !== 'handle') return leaveShard(route, latest.object, services, verdict);
  }
  const { route, latest } = batch;
  if (route.eventHandlers.length > 0) {
    const scope = { resource: route.resource, memos: services.memos };
    await runEventHandlers(
      route.eventHandlers,
      batch.events,
      services.logger,
      batch.signal,
      services.client,
      services.metrics,
      services.handlerTimeoutMs,
      scope,
    );
  }
  const result = await route.changes?.process(batch);
  const ownedResult = await route.owned?.process(batch);
  // Level-triggered, after the change handlers, so it sees the finalizer they put on.
  const reconcileResult = await route.reconcile?.process(batch);
  const uid = latest.object.metadata?.uid ?? '';
  if (latest.type === 'DELETED') {
    const stopped = Promise.all(routeEngines(route).map((engine) => engine.stopObject(uid)));
    // The memo goes once its timers and daemons have stopped, so none of them makes it again.
    void stopped.finally(() => services.memos?.forget(uid));
  } else {
    for (const engine of routeEngines(route)) engine.observe(latest.object);
  }
  return soonerRetry(result, ownedResult, reconcileResult);
}

/**
 * An object leaves this replica's shard: its timers and daemons stop (a running timer or daemon is
 * waited for) and its memo goes, no handler runs; when asked to drain, the object is then released
 * for the coordinator to assign elsewhere, so its next member never overlaps with this one.
 */
async function leaveShard(
  route: Route,
  object: KubeObject,
  services: RouteServices,
  verdict: 'drain' | 'forget',
): Promise<ProcessResult> {
  const uid = object.metadata?.uid ?? '';
  const engines = routeEngines(route);
  await Promise.all(engines.map((engine) => engine.stopObject(uid)));
  services.memos?.forget(uid);
  route.changes?.memories.forget(uid);
  route.reconcile?.forget(uid);
  route.owned?.forget(uid);
  if (verdict !== 'drain') return undefined;
  if (engines.some((engine) => engine.stillRunning(uid))) {
    // A daemon ignoring its stop is still running: the next member would run it twice.
    services.logger.warn(
      { namespace: object.metadata?.namespace, name: object.metadata?.name },
      'a stopped daemon of a drained object still runs; handing the object on once it ends',
    );
    return { requeueAfterMs: RELEASE_RETRY_MS, retry: true };
  }
  try {
    await services.shard?.release(route.resource, object);
  } catch (error) {
    // Still this member's and draining, with its timers and daemons stopped: release it on the retry.
    services.logger.warn(
      {
        namespace: object.metadata?.namespace,
        name: object.metadata?.name,
        err: error instanceof Error ? error.message : String(error),
      },
      'could not hand the drained object on; trying again',
    );
    return { requeueAfterMs: RELEASE_RETRY_MS, retry: true };
  }
  return undefined;
}

/** The processors' results as one: the soonest of their requested re-runs, at the highest priority any asked for. */
function soonerRetry(...results: ProcessResult[]): ProcessResult {
  const asked = results.filter(
    (result): result is Exclude<ProcessResult, void> => result?.requeueAfterMs !== undefined,
  );
  if (asked.length === 0) return undefined;
  const order = ['low', 'normal', 'high'] as const;
  const priority = asked
    .map((result) => result.priority ?? 'normal')
    .reduce((a, b) => (order.indexOf(b) > order.indexOf(a) ? b : a));
  return {
    requeueAfterMs: Math.min(...asked.map((result) => result.requeueAfterMs!)),
    ...(priority === 'normal' ? {} : { priority }),
    ...(asked.some((result) => result.retry) ? { retry: true } : {}),
  };
}
