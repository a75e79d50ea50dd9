import type { Tracing } from '../observability/tracing.js';
import type { ClusterAccess } from '../api/kubeconfig.js';
import type { RequestCounter } from '../api/api-client.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Registry, HandlerClass } from '../registry/registry.js';
import type { WatchTuning } from '../watching/watch-hub.js';
import type { Memo } from '../intents/memo.js';
import { toMilliseconds, type DurationInput } from '../clock/duration.js';
import { MAX_TIMEOUT_MS } from '../clock/long-timeout.js';
import type { WebhookOptions } from './operator-webhooks.js';

/** Options for {@link createOperator}. */
export interface OperatorOptions {
  /**
   * Cluster access: a client-node `KubeConfig`, or `loadKubeconfig()`'s result. Default:
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
   * Default time limit for one handler attempt: change handlers, `@on.event` handlers and timer runs
   * taking longer have their `signal` aborted, are no longer waited for, and count as a failure
   * (change handlers and timers retry as after any error). Daemons are long-running by design and
   * have none. Default: no limit (0 too).
   */
  handlerTimeout?: DurationInput;
  /** Where the operator logs. Default: {@link createLogger}'s, JSON at `info`. */
  logger?: Logger;
  /** Where the operator reports its metrics. Default: Prometheus metrics, served on `/metrics` with `health`. */
  metrics?: Metrics;
  /**
   * Traces each object's processing, timer ticks, daemon runs and webhook requests with OpenTelemetry
   * (from {@link loadTracing}). Default: off. `stop()` flushes what is buffered; shutting it down is the caller's.
   */
  tracing?: Tracing;
  /** Watch tuning (page size, idle timeout, reconnect backoff); defaults follow client-go. */
  watch?: WatchOptions;
  /**
   * Who this operator is on the objects it handles, a DNS-1123 subdomain (e.g. `db-operator.example.com`;
   * default `konductor.dev`). It is the prefix of every annotation the operator writes (diff-base,
   * handler progress, timer schedules) and of its finalizer (`<identity>/finalizer`), and it names the
   * default Lease (`<identity>-leader`), the Events' `source.component` and the `fieldManager` of the
   * operator's writes. Two operators that handle the same objects need different identities: each then
   * keeps its own bookkeeping and finalizer, deletion waits for both, and neither takes the other's
   * bookkeeping for a change (an identity other than the default marks its annotations with
   * `<identity>/konductor-managed: "yes"` for that). The default keeps the names of earlier releases
   * (`konductor.dev/...`, Lease `konductor-leader`, component and field manager `konductor`).
   * Changing the identity of a running operator makes it a new one: objects are handled anew under
   * the new keys, and the old finalizer stays until removed by hand.
   */
  identity?: string;
  /**
   * Where the operator keeps each object's diff-base (its last handled state) and handler progress:
   * - `'annotations'` (default): `<identity>/last-handled-configuration` and `<identity>/<handler>`
   *   annotations, written with a PATCH of the object;
   * - `'status'`: `status["<identity>"]` (the diff-base as one JSON string, progress records by
   *   handler), written in the status PATCH the handlers make anyway, so a create handler that writes
   *   status costs one write instead of two. Needs a status subresource whose schema keeps the field
   *   (`x-kubernetes-preserve-unknown-fields: true` under `status`, as Kopf's status storage).
   *
   * Both places are always read (the configured one first), so switching storage re-runs no handler;
   * only the configured one is written, and records left in the other are removed when that place is
   * written anyway. A resource without a status subresource uses annotations (logged at start); one
   * whose status schema drops the field falls back to annotations at the first write (logged as an error).
   * Timer schedules stay in annotations whatever the storage.
   */
  storage?: 'annotations' | 'status';
  /**
   * The name this operator's Events are reported under (their `source.component`), so Events of
   * several operators (or a cluster's other controllers) can be told apart. Default: `konductor` for
   * the default identity, else the identity.
   */
  eventSource?: string;
  /** Called after every API request (method, path, status), e.g. to count writes in tests. */
  onRequest?: RequestCounter;
  /**
   * Serve `/healthz`, `/readyz` and `/metrics` on this port (0 picks a free one; see `healthPort`).
   * `watchStall`: a watch silent for longer makes `/healthz` fail (default 180 s: well past the 70 s
   * idle watchdog plus a reconnect backoff). `handlerStall`: work waiting this long for a handler slot
   * while no handler run finishes makes `/healthz` fail, since every slot is held by a hung handler
   * (default 300 s; 0 turns the check off).
   */
  health?: {
    /** The port; 0 picks a free one. */
    port: number;
    /** The address to listen on. Default `0.0.0.0`. */
    host?: string;
    /** Default 180 s. */
    watchStall?: DurationInput;
    /** Default 300 s; 0 turns the check off. */
    handlerStall?: DurationInput;
  };
  /**
   * Run only while holding a `coordination.k8s.io/v1` Lease, so replicas never handle at the same time
   * (defaults 30 s lease, 20 s renew deadline, 2 s retry: an API server stalled for up to about 17 s
   * costs nothing, a crashed leader is replaced within about 35 s). Losing the Lease stops all work;
   * `stop()` drains, then releases it so a successor takes over at once.
   */
  leaderElection?: {
    /** Where the Lease is. */
    namespace: string;
    /** The Lease's name. Default: the identity's (`konductor-leader` for the default identity, else `<identity>-leader`). */
    name?: string;
    /** Default: `$POD_NAME` (a restarted container takes its Pod's Lease back at once), else the host name plus a random suffix. */
    identity?: string;
    /** How long others wait after the Lease's last change before taking it over. Default 30 s. */
    leaseDuration?: DurationInput;
    /** How long a leader tries to renew before it gives up leading; below `leaseDuration`. Default 20 s. */
    renewDeadline?: DurationInput;
    /** The pause between attempts to acquire or renew. Default 2 s. */
    retryPeriod?: DurationInput;
    /**
     * Keep a standby's watches and cache filled while it waits (memory as the leader's), so that on
     * taking over it handles changes at once instead of first listing every object. Ignored with
     * sharding, where every replica works. Default off.
     */
    warmStandby?: boolean;
  };
  /**
   * Share the objects out among the replicas, all of them working at once (needs `leaderElection`):
   * each replica holds a member Lease of its own and handles only the objects labelled
   * `<identity>/shard: <its member name>`; the leader Lease's holder labels them by consistent hashing
   * over the live members, and when one comes or goes moves about 1/N of them, each first drained by
   * its old member (its timers and daemons stopped) so no two replicas ever handle one object. Default off.
   */
  sharding?: boolean;
  // memo
  /**
   * The operator memo: each object's `ctx.memo` starts as a shallow copy of it, so its values that are
   * objects (a cache, a client, a counter holder) are shared by every object, while keys set on an
   * object's memo stay that object's (Kopf's `memo`). Default `{}`.
   *
   * @example
   * ```ts
   * createOperator({ handlers: [Widgets], memo: { shared: new Map<string, string>() } });
   * ```
   */
  memo?: Memo;
  // admission webhooks
  /**
   * The admission and conversion webhook server, used when the handlers declare `@on.validate`,
   * `@on.mutate` or `@on.convert`: its port, how the API server reaches it (`service` in a cluster,
   * `url` for local development), and where its certificates are kept. See {@link WebhookOptions}.
   */
  webhooks?: WebhookOptions;
}

/** Default of `health.handlerStall`, in ms: far beyond any handler that is merely slow, well before a person notices. */
export const DEFAULT_HANDLER_STALL_MS = 300_000;

/** Default of `health.watchStall`, in ms: well past the 70 s idle watchdog plus a reconnect backoff. */
export const DEFAULT_WATCH_STALL_MS = 180_000;

/** Watch tuning of {@link OperatorOptions.watch}. */
export interface WatchOptions {
  /** Page size of the initial listing. Default 500. */
  pageSize?: number;
  /** A connection silent for this long is treated as dead and replaced. Default 70 s (Kopf's figure). */
  idleTimeout?: DurationInput;
  /** Reconnect backoff. Default: client-go's 0.8 s doubling (`factor` 2) to 30 s, reset after 2 min. */
  reconnect?: {
    /** The first delay. */
    initial?: DurationInput;
    /** The longest delay, before jitter. */
    max?: DurationInput;
    /** Each delay is the previous one times this. */
    factor?: number;
    /** Adds up to `jitter × delay` at random. */
    jitter?: number;
    /** Start over from `initial` after this long without a failure. */
    resetAfter?: DurationInput;
  };
  /** Keep `metadata.managedFields` on cached objects (dropped by default: it is most of an object's size). */
  keepManagedFields?: boolean;
  /**
   * Refuse an initial listing that would not fit in the heap, with an error naming the objects and
   * the `--max-old-space-size` to set, instead of the process dying mid-listing. Default `true`.
   */
  memoryBudget?: boolean;
}

/** The operator's durations in milliseconds, checked once when it is created. @internal */
export interface OperatorTimings {
  handlerTimeoutMs: number | undefined;
  watchStallMs: number;
  handlerStallMs: number;
  lease: { leaseDurationMs?: number; renewDeadlineMs?: number; retryPeriodMs?: number };
  watch: WatchTuning | undefined;
}

/**
 * The durations of `options` in milliseconds. A malformed or out-of-range one throws, naming the
 * option: timers cannot wait longer than about 24.8 days (`setTimeout` would fire at once).
 */
export function operatorTimings(options: OperatorOptions): OperatorTimings {
  const ms = (value: DurationInput | undefined, what: string): number | undefined => {
    if (value === undefined) return undefined;
    const result = toMilliseconds(value, `OperatorOptions.${what}`);
    if (result > MAX_TIMEOUT_MS)
      throw new Error(
        `OperatorOptions.${what}: at most ${MAX_TIMEOUT_MS / 1000} s (about 24.8 days)`,
      );
    return result;
  };
  const election = options.leaderElection;
  if (options.sharding && !election)
    throw new Error(
      'OperatorOptions.sharding needs leaderElection: the replicas find each other through Leases in its namespace',
    );
  const watch = options.watch;
  const reconnect = watch?.reconnect;
  const timeout = ms(options.handlerTimeout, 'handlerTimeout');
  return {
    handlerTimeoutMs: timeout === 0 ? undefined : timeout,
    watchStallMs: ms(options.health?.watchStall, 'health.watchStall') ?? DEFAULT_WATCH_STALL_MS,
    handlerStallMs:
      ms(options.health?.handlerStall, 'health.handlerStall') ?? DEFAULT_HANDLER_STALL_MS,
    lease: {
      leaseDurationMs: ms(election?.leaseDuration, 'leaderElection.leaseDuration'),
      renewDeadlineMs: ms(election?.renewDeadline, 'leaderElection.renewDeadline'),
      retryPeriodMs: ms(election?.retryPeriod, 'leaderElection.retryPeriod'),
    },
    watch: watch && {
      pageSize: watch.pageSize,
      idleTimeoutMs: ms(watch.idleTimeout, 'watch.idleTimeout'),
      keepManagedFields: watch.keepManagedFields,
      memoryBudget: watch.memoryBudget,
      backoff: reconnect && {
        initialMs: ms(reconnect.initial, 'watch.reconnect.initial'),
        maxMs: ms(reconnect.max, 'watch.reconnect.max'),
        factor: reconnect.factor,
        jitter: reconnect.jitter,
        resetAfterMs: ms(reconnect.resetAfter, 'watch.reconnect.resetAfter'),
      },
    },
  };
}
