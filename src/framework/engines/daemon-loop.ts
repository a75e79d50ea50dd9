import { rootSpan, type Tracing } from '../observability/tracing.js';
import { isWrite, type ApiClient } from '../api/api-client.js';
import { ApiError } from '../api/api-error.js';
import { withoutManagedFields } from '../api/managed-fields.js';
import { ObjectApi } from '../api/object-api.js';
import { observedClient } from '../api/observed-client.js';
import type { Resource } from '../api/resource.js';
import type { Clock } from '../clock/clock.js';
import { toMilliseconds } from '../clock/duration.js';
import { asError, describeError, PermanentError } from '../intents/errors.js';
import { retryDelayMs } from '../intents/retry-delay.js';
import type { DaemonSpec } from '../intents/handler-specs.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { EventPoster } from '../posting/events.js';
import type { ObjectMemos } from '../intents/memo.js';
import type { KubeObject } from '../objects/kube-object.js';
import { emptyPatch } from '../intents/patch.js';
import { writePatch, WriteSuperseded } from '../processing/patch-writer.js';
import { deliverResult } from '../processing/results-delivery.js';
import { liveDaemonContext } from './daemon-context.js';
import type { RunningWorker, WorkerSeed } from './object-workers.js';

const DEFAULT_CANCELLATION_TIMEOUT_MS = 60_000;

/** What a daemon worker needs from its engine. */
export interface DaemonLoopDeps {
  resource: Resource;
  client: ApiClient;
  logger: Logger;
  poster: EventPoster;
  metrics: Metrics;
  tracing: Tracing;
  clock: Clock;
  /** memo: the operator's per-object memos (`ctx.memo`). */
  memos?: ObjectMemos;
}

/** The daemon's own object as its latest write through `ctx.client` answered it, and the watched version that write was sent from. */
export interface OwnWrite {
  from: string | undefined;
  object: KubeObject;
}

/**
 * What the daemon's context shows as its object: the answer to its own latest write while the watch has
 * delivered nothing since that write was sent (so a step right after a status write sees that status,
 * not the one before it), else the watched body. Once the watch moves on, the watched body it is: events
 * come in order, so it holds the write or something later (or, for a moment, a state the write
 * overtook, which the write's own event then replaces).
 */
export function newestOwnState(body: KubeObject, written: OwnWrite | undefined): KubeObject {
  return written !== undefined && body.metadata?.resourceVersion === written.from
    ? written.object
    : body;
}

/** Starts one `@daemon` on one object, as a worker of the per-object engine. */
export function startDaemon(seed: WorkerSeed<DaemonSpec>, deps: DaemonLoopDeps): RunningWorker {
  const daemon = new DaemonWorker(seed, deps);
  return { done: daemon.done, stop: () => daemon.stop() };
}

/**
 * One daemon on one object: a long-lived task. One that returns stays ended; one that throws is
 * restarted with backoff (or after a TemporaryError's delay), except on a PermanentError, which ends
 * it for this process. Stopping resolves `stopped` at once, aborts `signal` after
 * `cancellationBackoff`, and waits up to `cancellationTimeout` for the task to end before abandoning
 * it with a warning.
 */
class DaemonWorker {
  /** The daemon's own signal: aborted after `cancellationBackoff` once a stop is requested. */
  private readonly abort = new AbortController();
  private readonly stopped: Promise<void>;
  readonly done: Promise<void>;
  /** The daemon's latest write to its own object through `ctx.client`, until the watch moves past it. */
  private written: OwnWrite | undefined;
  /** `ctx.client`: the operator's client, noting the daemon's writes to its own object. */
  private readonly client: ApiClient;

  constructor(
    private readonly seed: WorkerSeed<DaemonSpec>,
    private readonly deps: DaemonLoopDeps,
  ) {
    const { stopping } = seed;
    this.stopped = new Promise<void>((resolve) => {
      if (stopping.aborted) resolve();
      else stopping.addEventListener('abort', () => resolve(), { once: true });
    });
    const uid = seed.body.metadata?.uid;
    this.client = observedClient(deps.client, (method) => {
      if (!isWrite(method) || uid === undefined) return undefined;
      const from = this.seed.body.metadata?.resourceVersion;
      return (answer) => {
        const object = answer as KubeObject | undefined;
        if (object?.metadata?.uid === uid)
          this.written = { from, object: withoutManagedFields(object) };
      };
    });
    this.done = this.loop();
  }

  /** The object as the daemon's context shows it: see {@link newestOwnState}. */
  private current(): KubeObject {
    const body = this.seed.body;
    const newest = newestOwnState(body, this.written);
    if (newest === body) this.written = undefined; // the watch moved on: the write is of no more use
    return newest;
  }

  /** After the stop request: aborts the signal after the cancellation backoff, then waits up to the cancellation timeout. */
  async stop(): Promise<void> {
    const { handler: spec } = this.seed;
    const body = this.seed.body;
    const backoffMs =
      spec.options.cancellationBackoff === undefined
        ? 0
        : toMilliseconds(spec.options.cancellationBackoff);
    if (backoffMs === 0 || !(await this.exitsWithin(backoffMs))) this.abort.abort();
    const timeoutMs =
      spec.options.cancellationTimeout === undefined
        ? DEFAULT_CANCELLATION_TIMEOUT_MS
        : toMilliseconds(spec.options.cancellationTimeout);
    if (!(await this.exitsWithin(timeoutMs))) {
      const meta = body.metadata ?? {};
      this.deps.logger.warn(
        { namespace: meta.namespace, name: meta.name, handler: spec.id, timeoutMs },
        `daemon ${spec.id} did not exit within its cancellation timeout; abandoning it`,
      );
      this.deps.poster.post(
        body,
        'Warning',
        'DaemonAbandoned',
        `${spec.id} did not stop within ${Math.round(timeoutMs / 1000)} s`,
      );
    }
  }

  private async loop(): Promise<void> {
    const { handler: spec, stopping, handOver } = this.seed;
    const { deps } = this;
    const meta = this.seed.body.metadata ?? {};
    const logger = deps.logger.child({
      namespace: meta.namespace,
      name: meta.name,
      handler: spec.id,
    });
    // The clock's sleep chains waits past setTimeout's 24.8-day limit: a long backoff must not become a restart loop.
    const pause = (ms: number): Promise<void> => deps.clock.sleep(ms, stopping);
    const count = (result: 'success' | 'retry' | 'failure'): void =>
      deps.metrics.increment('handler_runs_total', { handler: spec.id, result });
    // A new instance waits for one still exiting: never two at once.
    if (handOver) await Promise.race([handOver, this.stopped]);
    if (spec.options.initialDelay !== undefined && !stopping.aborted)
      await pause(toMilliseconds(spec.options.initialDelay));
    let retry = 0;
    while (!stopping.aborted) {
      const context = liveDaemonContext(() => this.current(), {
        logger,
        resource: deps.resource,
        client: this.client,
        signal: this.abort.signal,
        stopped: this.stopped,
        retry,
        memos: deps.memos,
      });
      try {
        const attributes = {
          'konductor.handler.id': spec.id,
          'k8s.namespace.name': meta.namespace ?? '',
          'konductor.object.name': meta.name ?? '',
          'konductor.handler.retry': retry,
        };
        // One trace per (re)start: its requests are the span's children until the function returns.
        const returned = await rootSpan(
          deps.tracing,
          `daemon ${spec.id}`,
          // A daemon may loop for days in one call: its trace keeps its first 128 requests.
          { attributes, maxSpans: 128 },
          async () => (await spec.fn(context)) as unknown,
        );
        count('success');
        logger.info(`daemon ${spec.id} ended`);
        // A daemon asked to stop may be ending because its object is going: its result is not written then.
        if (!stopping.aborted) await this.deliver(returned, logger);
        return;
      } catch (thrown) {
        // `throw undefined` and `Promise.reject()` are failures too, restarted like any other.
        const error = asError(thrown);
        // Ending on a stop request counts as ending, even by throwing (an aborted request rejects).
        if (stopping.aborted) {
          count('success');
          return;
        }
        const message = describeError(error);
        if (error instanceof PermanentError) {
          // As in Kopf: a permanent failure is not retried; the daemon stays down until the process restarts.
          count('failure');
          logger.error(
            { err: message },
            `daemon ${spec.id} failed permanently; not restarted: ${message}`,
          );
          deps.poster.post(
            this.seed.body,
            'Warning',
            'DaemonFailed',
            `${spec.id} failed permanently and is not restarted: ${message}`,
          );
          return;
        }
        count('retry');
        retry += 1;
        const restartIn = retryDelayMs(error, retry, spec.options.backoff);
        logger.error(
          { err: message, retry },
          `daemon ${spec.id} failed; restarting in ${Math.round(restartIn / 1000)} s: ${message}`,
        );
        deps.poster.post(
          this.seed.body,
          'Warning',
          'DaemonFailed',
          `${spec.id} failed, restarting: ${message}`,
        );
        await pause(restartIn);
      }
    }
  }

  /**
   * Results delivery for a daemon that ended by itself: what it returned goes to `status[<daemon id>]`
   * in one write (none when that is already stored). A value that is not JSON, or a failed write, is
   * logged and posted as a Warning Event; the daemon stays ended either way.
   */
  private async deliver(returned: unknown, logger: Logger): Promise<void> {
    const { handler: spec } = this.seed;
    const body = this.current();
    const patch = emptyPatch();
    const problem = deliverResult(patch, spec.id, returned, body);
    if (problem !== undefined) {
      logger.error({}, problem);
      this.deps.poster.post(body, 'Warning', 'DaemonResultNotStored', problem);
      return;
    }
    if (!Object.hasOwn(patch.status, spec.id)) return; // nothing returned, or already stored
    const api = new ObjectApi(this.deps.client, this.deps.resource);
    try {
      await writePatch(api, body, { status: patch.status }, { signal: this.seed.stopping });
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return; // deleted meanwhile
      if (error instanceof WriteSuperseded) return; // its new owner handles it
      const message = `storing the result of daemon ${spec.id} failed: ${describeError(error)}`;
      logger.error({ err: describeError(error) }, message);
      this.deps.poster.post(body, 'Warning', 'DaemonResultNotStored', message);
    }
  }

  /** Whether the daemon's loop ends within `ms`. */
  private async exitsWithin(ms: number): Promise<boolean> {
    const guard = new AbortController();
    const exited = await Promise.race([
      this.done.then(() => true),
      this.deps.clock.sleep(ms, guard.signal).then(() => false),
    ]);
    guard.abort();
    return exited;
  }
}
