import { activeSpan, rootSpan, type SpanStart, type Tracing } from '../observability/tracing.js';
import { ApiError } from '../api/api-error.js';
import type { ObjectApi } from '../api/object-api.js';
import type { Clock } from '../clock/clock.js';
import { withTimeLimit } from '../clock/time-limit.js';
import { asError, describeError, PermanentError, TemporaryError } from '../intents/errors.js';
import type { TimerContext, TimerSpec } from '../intents/handler-specs.js';
import { objectContext } from '../intents/object-context.js';
import type { ObjectMemos } from '../intents/memo.js';
import { emptyPatch, isEmptyPatch, mergeInto, type Patch } from '../intents/patch.js';
import { writePatch, WriteSuperseded } from '../processing/patch-writer.js';
import { deliverResult } from '../processing/results-delivery.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import type { Labels, Metrics } from '../observability/metrics.js';
import type { EventPoster } from '../posting/events.js';
import { markerToWrite, type Identity } from '../state/identity.js';
import type { RunningWorker, WorkerSeed } from './object-workers.js';
import { nextRunAt, type TimerState } from './schedule.js';
import { recordAfterRun, restoreTimerState, timerKey } from './timer-record.js';
import { timerSettings, type TimerSettings } from './timer-settings.js';

/** What a timer worker needs from its engine. */
export interface TimerLoopDeps {
  api: ObjectApi;
  logger: Logger;
  poster: EventPoster;
  metrics: Metrics;
  tracing: Tracing;
  clock: Clock;
  /** A run taking longer is abandoned and counts as a failure; undefined: no limit. */
  runTimeoutMs?: number;
  /** Whose annotation keeps a long timer's schedule. */
  identity: Identity;
  /** memo: the operator's per-object memos (`ctx.memo`). */
  memos?: ObjectMemos;
  /** The essence of one state of the object, to tell a change from an echo of a write. */
  essence(body: KubeObject): string;
  /** Warns about a timer's stored record that is not what the framework writes. */
  warnRecord(body: KubeObject, timerId: string, raw: string, what: string): void;
}

interface TimerLabels {
  timer: Labels;
  handler: Labels;
  /** `handler_runs_total` by outcome, as the span names it: a permanent failure, a temporary one (retried). */
  success: Labels;
  permanent: Labels;
  temporary: Labels;
}

function timerLabels(id: string): TimerLabels {
  const run = (result: string): Labels => Object.freeze({ handler: id, result });
  return {
    timer: Object.freeze({ timer: id }),
    handler: Object.freeze({ handler: id }),
    success: run('success'),
    permanent: run('failure'),
    temporary: run('retry'),
  };
}

/** Starts one `@timer` on one object: its schedule loop, as a worker of the per-object engine. */
export function startTimer(seed: WorkerSeed<TimerSpec>, deps: TimerLoopDeps): RunningWorker {
  const timer = new TimerWorker(seed, deps);
  return { done: timer.loop(), observe: (body) => timer.observe(body) };
}

/**
 * One timer on one object: waits for the next run its schedule gives, runs the handler (never
 * overlapping itself), writes the handler's patch and a long timer's schedule, and plans again.
 * A change to the object re-plans an idle wait; a PermanentError halts the timer until a change.
 */
class TimerWorker {
  private readonly spec: TimerSpec;
  /** Made once per worker: a child logger per tick would cost more than the tick itself. */
  private readonly logger: Logger;
  /** Metric labels made once per worker: the recorder keys a label object once, not per tick. */
  private readonly labels: TimerLabels;
  /** Its ticks' root span name, made once per worker like the labels. */
  private readonly spanName: string;
  private readonly state: TimerState;
  private essence: string;
  /** The settings for one state of the object (a computed interval depends on it). */
  private cached?: { body: KubeObject; settings: TimerSettings };
  private failures = 0;
  private plannedAt?: number;
  /** A run failed with a PermanentError: no more runs for this object until it changes (or a restart), as in Kopf. */
  private halted = false;
  /** A run (or the wait for the previous worker's run) is under way: a change applies once it ends. */
  private busy = false;
  /** A return value that is not JSON was reported for this object: one Event, not one per tick. */
  private reportedResult = false;
  /** Ends the current wait early (the object changed, or the timer stops); undefined while not waiting. */
  private wakeUp?: () => void;

  constructor(
    private readonly seed: WorkerSeed<TimerSpec>,
    private readonly deps: TimerLoopDeps,
  ) {
    const { handler: spec, body } = seed;
    this.spec = spec;
    this.spanName = `timer ${spec.id}`;
    let settings: TimerSettings | undefined;
    try {
      settings = timerSettings(spec, body);
    } catch {
      settings = undefined; // a bad interval: planning reports it
    }
    const annotations = body.metadata?.annotations;
    // An earlier release's default id (`Class.method`) keeps the schedule until this one writes its own.
    const raw = [spec.id, ...(spec.legacyIds ?? [])]
      .map((id) => annotations?.[timerKey(id, deps.identity)])
      .find((value) => value !== undefined);
    const restored = restoreTimerState(raw, settings, deps.clock.now());
    if (raw !== undefined && restored.warning !== undefined)
      deps.warnRecord(body, spec.id, raw, restored.warning);
    this.state = restored.state;
    this.essence = deps.essence(body);
    this.labels = timerLabels(spec.id);
    this.logger = deps.logger.child({
      namespace: body.metadata?.namespace,
      name: body.metadata?.name,
      handler: spec.id,
    });
    seed.stopping.addEventListener('abort', () => this.wakeUp?.(), { once: true });
  }

  /** The object changed: every change restarts an idle wait (and may change a computed interval), and may be the fix a halted timer waits for. */
  observe(body: KubeObject): void {
    const essence = this.deps.essence(body);
    if (essence === this.essence) return;
    this.essence = essence;
    this.state.lastChange = this.deps.clock.now();
    this.halted = false;
    if (!this.busy) this.wakeUp?.();
  }

  async loop(): Promise<void> {
    const { stopping } = this.seed;
    let handOver = this.seed.handOver;
    while (!stopping.aborted) {
      const woken = await this.waitUntil(this.plan());
      if (woken) continue; // changed or stopping: plan again, or end
      this.busy = true;
      // Never alongside the previous worker's run: it was asked to stop but may still be ending.
      if (handOver) await handOver;
      handOver = undefined;
      if (!stopping.aborted) {
        try {
          await rootSpan(this.deps.tracing, this.spanName, this.traceStart, () => this.run());
        } catch (error) {
          this.logger.error(
            { err: describeError(error) },
            `timer ${this.spec.id} failed unexpectedly`,
          );
        }
      }
      this.busy = false;
    }
  }

  /**
   * Waits until `at` (never, when undefined); true when woken early. One clock timeout and one
   * resolver per wait, no AbortController or listener: with 1,000 one-second timers this runs 1,000
   * times a second. The clock's timeout, never a bare setTimeout: a monthly interval is past its
   * 24.8-day limit and would fire at once.
   */
  private waitUntil(at: number | undefined): Promise<boolean> {
    return new Promise((resolve) => {
      const timeout = this.deps.clock.setTimeout(
        () => {
          this.wakeUp = undefined;
          resolve(false);
        },
        at === undefined ? Infinity : Math.max(0, at - this.deps.clock.now()),
      );
      this.wakeUp = () => {
        this.wakeUp = undefined;
        timeout.clear();
        resolve(true);
      };
    });
  }

  /** A tick's root span: which timer of which object, how late, which retry (built only when traced). */
  private readonly traceStart = (): SpanStart => {
    const meta = this.seed.body.metadata ?? {};
    const late = this.plannedAt === undefined ? 0 : this.deps.clock.now() - this.plannedAt;
    return {
      attributes: {
        'konductor.handler.id': this.spec.id,
        'k8s.namespace.name': meta.namespace ?? '',
        'konductor.object.name': meta.name ?? '',
        'konductor.object.uid': meta.uid ?? '',
        'konductor.timer.lateness_ms': Math.max(0, late),
        'konductor.handler.retry': this.failures,
      },
    };
  };

  /** When to run next; undefined while halted, done, or the object makes the interval invalid. */
  private plan(): number | undefined {
    if (this.halted) return undefined;
    const body = this.seed.body;
    let at: number | undefined;
    try {
      at = nextRunAt(this.settingsFor(body).schedule, this.state);
    } catch (error) {
      // A bad computed interval (e.g. a malformed policy field) is the object's problem, not a crash.
      const meta = body.metadata ?? {};
      this.deps.logger.error(
        { namespace: meta.namespace, name: meta.name, timer: this.spec.id },
        describeError(error),
      );
      this.deps.poster.post(
        body,
        'Warning',
        'TimerInvalid',
        `${this.spec.id}: ${describeError(error)}`,
      );
      return undefined;
    }
    if (at !== undefined) this.plannedAt = at;
    return at;
  }

  private settingsFor(body: KubeObject): TimerSettings {
    if (this.cached?.body !== body)
      this.cached = { body, settings: timerSettings(this.spec, body) };
    return this.cached.settings;
  }

  private async run(): Promise<void> {
    const { spec, state, deps, labels } = this;
    const { stopping } = this.seed;
    const body = this.seed.body;
    const start = deps.clock.now();
    if (this.plannedAt !== undefined)
      deps.metrics.observe?.(
        'timer_lateness_seconds',
        Math.max(0, start - this.plannedAt) / 1000,
        labels.timer,
      );
    state.lastStart = start;
    state.lastPlanned = this.plannedAt ?? start;
    state.gridAnchor ??= state.lastPlanned;
    state.retryAt = undefined;
    const patch = emptyPatch();
    let succeeded = false;
    const began = performance.now();
    try {
      // Without a time limit the run's signal is the worker's own: no controller, listener or race per tick.
      let returned: unknown;
      if (deps.runTimeoutMs === undefined)
        returned = await spec.fn(this.context(body, patch, stopping));
      else
        returned = await withTimeLimit(
          (signal) => spec.fn(this.context(body, patch, signal)),
          deps.runTimeoutMs,
          stopping,
        );
      succeeded = true;
      this.failures = 0;
      this.deliver(body, patch, returned);
    } catch (thrown) {
      // `throw undefined` and `Promise.reject()` are failures too.
      this.failed(body, asError(thrown));
    }
    state.lastEnd = deps.clock.now();
    deps.metrics.observe?.(
      'handler_duration_seconds',
      (performance.now() - began) / 1000,
      labels.handler,
    );
    const outcome = succeeded ? 'success' : this.halted ? 'permanent' : 'temporary';
    deps.metrics.increment('handler_runs_total', labels[outcome]);
    activeSpan()?.setAttribute('konductor.handler.outcome', outcome);
    if (stopping.aborted) return;
    const merged = this.changes(body, patch, succeeded);
    if (merged === undefined) return; // a short timer that wrote nothing: no request, no promise
    try {
      await writePatch(deps.api, body, merged, { signal: stopping });
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return; // deleted meanwhile
      if (error instanceof WriteSuperseded) return; // its new owner handles it
      this.logger.error(
        { err: describeError(error) },
        `writing the result of timer ${spec.id} failed`,
      );
    }
  }

  /**
   * Results delivery, as for change handlers: a returned value goes to `status[<timer id>]` in the
   * run's own write. A value already stored there is not written again, so a timer returning the same
   * result every tick makes no request for it. A value that is not JSON is not stored and is reported
   * once per object; the run still counts as done, so a periodic job is never halted by its return value.
   */
  private deliver(body: KubeObject, patch: Patch, returned: unknown): void {
    const problem = deliverResult(patch, this.spec.id, returned, body);
    if (problem === undefined || this.reportedResult) return;
    this.reportedResult = true;
    this.logger.error({ handler: this.spec.id }, problem);
    this.deps.poster.post(body, 'Warning', 'TimerResultNotStored', problem);
  }

  private context(body: KubeObject, patch: Patch, signal: AbortSignal): TimerContext {
    const context = objectContext(
      body,
      this.logger,
      this.deps.api.resource,
      this.deps.api.client,
      this.deps.memos,
    ) as TimerContext;
    context.patch = patch;
    context.retry = this.failures;
    context.signal = signal;
    return context;
  }

  private failed(body: KubeObject, error: Error): void {
    const { spec, logger, deps } = this;
    this.failures += 1;
    const message = describeError(error);
    if (error instanceof TemporaryError) this.state.retryAt = deps.clock.now() + error.delay * 1000;
    if (error instanceof PermanentError) {
      this.halted = true;
      const stopped = `${spec.id} failed permanently and stops for this object until it changes or the operator restarts: ${message}`;
      logger.error({ err: message, failures: this.failures }, `timer ${stopped}`);
      deps.poster.post(body, 'Warning', 'TimerFailed', stopped);
    } else {
      logger.error(
        { err: message, failures: this.failures },
        `timer ${spec.id} failed: ${message}`,
      );
      deps.poster.post(body, 'Warning', 'TimerFailed', `${spec.id} failed: ${message}`);
    }
  }

  /** The handler's patch, plus a long timer's schedule; undefined for a short timer that wrote nothing. */
  private changes(
    body: KubeObject,
    patch: Record<string, unknown>,
    succeeded: boolean,
  ): Record<string, unknown> | undefined {
    const settings = this.settingsFor(body);
    if (!settings.persists && isEmptyPatch(patch)) return undefined;
    const merged: Record<string, unknown> = {};
    mergeInto(merged, patch);
    if (settings.persists) {
      const annotations = body.metadata?.annotations;
      const key = timerKey(this.spec.id, this.deps.identity);
      const legacy = (this.spec.legacyIds ?? [])
        .map((id) => timerKey(id, this.deps.identity))
        .filter((old) => annotations?.[old] !== undefined);
      const previous = [key, ...legacy]
        .map((stored) => annotations?.[stored])
        .find((value) => value !== undefined);
      const record = recordAfterRun(
        previous,
        this.state,
        settings,
        succeeded,
        this.deps.clock.now(),
      );
      const dropped = Object.fromEntries(legacy.map((old) => [old, null]));
      mergeInto(merged, {
        metadata: {
          annotations: {
            ...dropped,
            [key]: JSON.stringify(record),
            ...markerToWrite(this.deps.identity, annotations),
          },
        },
      });
    }
    return merged;
  }
}
