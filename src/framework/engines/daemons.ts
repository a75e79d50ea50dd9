import { sleep } from '../clock/long-timeout.js';
import { asError, describeError, PermanentError, TemporaryError } from '../handler/errors.js';
import { matchesObject } from '../handler/filters.js';
import type { ApiClient } from '../api/api-client.js';
import type { Resource } from '../api/resource.js';
import type { Logger } from '../observability/logger.js';
import { noMetrics, type Metrics } from '../observability/metrics.js';
import type { EventPoster } from '../posting/events.js';
import type { DaemonContext, DaemonSpec } from '../handler/handler-specs.js';
import type { KubeObject } from '../objects/kube-object.js';
import { toMilliseconds } from '../clock/duration.js';
import { objectContext } from '../handler/object-context.js';

const DEFAULT_CANCELLATION_TIMEOUT_MS = 60_000;
const MAX_RESTART_DELAY_MS = 60_000;

/** Whether `done` settles within `ms`. */
async function settlesWithin(done: Promise<void>, ms: number): Promise<boolean> {
  const guard = new AbortController();
  const settled = await Promise.race([done.then(() => true), sleep(ms, guard.signal).then(() => false)]);
  guard.abort();
  return settled;
}

function exitingKey(uid: string, daemonId: string): string {
  return `${uid}/${daemonId}`;
}

interface DaemonSlot {
  spec: DaemonSpec;
  /** Aborted after `cancellationBackoff` once a stop is requested. */
  abort: AbortController;
  requestStop: () => void;
  stopped: Promise<void>;
  stopRequested: boolean;
  /** Settles when the daemon's loop has ended. */
  done: Promise<void>;
  /** Ended by itself (returned): not started again for this object in this process. */
  finished: boolean;
}

interface DaemonObject {
  body: KubeObject;
  slots: Map<string, DaemonSlot>;
}

export interface DaemonEngineOptions {
  resource: Resource;
  client: ApiClient;
  daemons: readonly DaemonSpec[];
  logger: Logger;
  poster: EventPoster;
  metrics?: Metrics;
}

/** A daemon's context: `body` and the fields derived from it read the newest state each time. */
function liveContext(entry: DaemonObject, logger: Logger, resource: Resource, client: ApiClient, slot: DaemonSlot, retry: number): DaemonContext {
  const now = () => objectContext(entry.body, logger, resource, client);
  return {
    get body() {
      return entry.body;
    },
    get spec() {
      return now().spec;
    },
    get status() {
      return now().status;
    },
    get metadata() {
      return now().metadata;
    },
    get name() {
      return now().name;
    },
    get namespace() {
      return now().namespace;
    },
    get uid() {
      return now().uid;
    },
    get labels() {
      return now().labels;
    },
    get annotations() {
      return now().annotations;
    },
    logger,
    resource,
    client,
    signal: slot.abort.signal,
    stopped: slot.stopped,
    retry,
  };
}

/**
 * Runs `@daemon` handlers: one long-lived task per (object, daemon). A daemon that returns stays
 * ended; one that throws is restarted with backoff (or after a TemporaryError's delay), except on a
 * PermanentError, which ends it for this process. Stopping resolves `stopped` at once, aborts `signal` after `cancellationBackoff`, and waits up to
 * `cancellationTimeout` for the task to end before abandoning it with a warning.
 */
export class DaemonEngine {
  private readonly objects = new Map<string, DaemonObject>();
  /** Daemons stopped on a filter mismatch and still exiting, by `uid/daemon id`. */
  private readonly exiting = new Map<string, Promise<void>>();
  private readonly metrics: Metrics;
  private stopping = false;

  constructor(private readonly options: DaemonEngineOptions) {
    this.metrics = options.metrics ?? noMetrics;
  }

  /** Whether any daemon applies to the object (then the framework finalizer holds it). */
  applies(body: KubeObject): boolean {
    return this.options.daemons.some((spec) => matchesObject(body, spec.options));
  }

  /** Takes the newest state: starts daemons for matching objects, stops those that no longer match. */
  observe(body: KubeObject): void {
    const uid = body.metadata?.uid;
    if (!uid || this.stopping) return;
    if (body.metadata?.deletionTimestamp) {
      void this.stopObject(uid);
      return;
    }
    let entry = this.objects.get(uid);
    if (!entry) {
      entry = { body, slots: new Map() };
      this.objects.set(uid, entry);
    }
    entry.body = body;
    for (const spec of this.options.daemons) {
      const slot = entry.slots.get(spec.id);
      const matches = matchesObject(body, spec.options);
      // A new instance waits for one still exiting after a mismatch: never two at once.
      if (matches && !slot) entry.slots.set(spec.id, this.start(entry, spec, this.exiting.get(exitingKey(uid, spec.id))));
      else if (!matches && slot) {
        entry.slots.delete(spec.id);
        this.trackExit(uid, spec.id, this.stopSlot(slot, entry.body));
      }
    }
  }

  /** Stops an object's daemons; resolves once they exited or were abandoned. */
  async stopObject(uid: string): Promise<void> {
    const entry = this.objects.get(uid);
    const stopping = entry ? [...entry.slots.values()].map((slot) => this.stopSlot(slot, entry.body)) : [];
    const exiting = [...this.exiting].filter(([key]) => key.startsWith(`${uid}/`)).map(([, done]) => done);
    await Promise.all([...stopping, ...exiting]);
    this.objects.delete(uid);
  }

  /** Stops every daemon (operator shutdown, lost leadership). */
  async stopAll(): Promise<void> {
    this.stopping = true;
    await Promise.all([...[...this.objects.keys()].map((uid) => this.stopObject(uid)), ...this.exiting.values()]);
  }

  /** Daemons currently running (not finished). */
  get running(): number {
    let count = 0;
    for (const entry of this.objects.values()) for (const slot of entry.slots.values()) if (!slot.finished) count += 1;
    return count;
  }

  /** Remembers a stopping daemon until it exited (or was abandoned), so a new instance can wait for it. */
  private trackExit(uid: string, daemonId: string, done: Promise<void>): void {
    const key = exitingKey(uid, daemonId);
    const tracked = done.catch(() => undefined).finally(() => {
      if (this.exiting.get(key) === tracked) this.exiting.delete(key);
    });
    this.exiting.set(key, tracked);
  }

  private start(entry: DaemonObject, spec: DaemonSpec, previous?: Promise<void>): DaemonSlot {
    let requestStop: () => void = () => undefined;
    const stopped = new Promise<void>((resolve) => (requestStop = resolve));
    const slot: DaemonSlot = {
      spec,
      abort: new AbortController(),
      requestStop,
      stopped,
      stopRequested: false,
      done: Promise.resolve(),
      finished: false,
    };
    slot.done = this.loop(entry, slot, previous);
    return slot;
  }

  private async loop(entry: DaemonObject, slot: DaemonSlot, previous: Promise<void> | undefined): Promise<void> {
    const { spec } = slot;
    const meta = (): KubeObject['metadata'] => entry.body.metadata ?? {};
    const logger = this.options.logger.child({ namespace: meta()?.namespace, name: meta()?.name, handler: spec.id });
    // `sleep` chains waits past setTimeout's 24.8-day limit: a long backoff must not become a restart loop.
    const pause = (ms: number): Promise<void> => Promise.race([sleep(ms, slot.abort.signal), slot.stopped]);
    const count = (result: 'success' | 'retry'): void => this.metrics.increment('handler_runs_total', { handler: spec.id, result });
    if (previous) await Promise.race([previous, slot.stopped]);
    if (spec.options.initialDelay !== undefined && !slot.stopRequested) await pause(toMilliseconds(spec.options.initialDelay));
    let retry = 0;
    while (!slot.stopRequested) {
      const context = liveContext(entry, logger, this.options.resource, this.options.client, slot, retry);
      try {
        await spec.fn(context);
        count('success');
        logger.info(`daemon ${spec.id} ended`);
        break;
      } catch (thrown) {
        // `throw undefined` and `Promise.reject()` are failures too, restarted like any other.
        const error = asError(thrown);
        // Ending on a stop request counts as ending, even by throwing (an aborted request rejects).
        if (slot.stopRequested) {
          count('success');
          break;
        }
        if (error instanceof PermanentError) {
          // As in Kopf: a permanent failure is not retried; the daemon stays down until the process restarts.
          this.metrics.increment('handler_runs_total', { handler: spec.id, result: 'failure' });
          const message = describeError(error);
          logger.error({ err: message }, `daemon ${spec.id} failed permanently; not restarted: ${message}`);
          this.options.poster.post(entry.body, 'Warning', 'DaemonFailed', `${spec.id} failed permanently and is not restarted: ${message}`);
          break;
        }
        count('retry');
        retry += 1;
        const restartIn =
          error instanceof TemporaryError
            ? error.delay * 1000
            : spec.options.backoff !== undefined
              ? spec.options.backoff * 1000
              : Math.min(MAX_RESTART_DELAY_MS, 1000 * 2 ** (retry - 1));
        const message = describeError(error);
        logger.error({ err: message, retry }, `daemon ${spec.id} failed; restarting in ${Math.round(restartIn / 1000)} s: ${message}`);
        this.options.poster.post(entry.body, 'Warning', 'DaemonFailed', `${spec.id} failed, restarting: ${message}`);
        await pause(restartIn);
      }
    }
    slot.finished = true;
  }

  private async stopSlot(slot: DaemonSlot, body: KubeObject): Promise<void> {
    if (!slot.stopRequested) {
      slot.stopRequested = true;
      slot.requestStop();
      const backoffMs = slot.spec.options.cancellationBackoff === undefined ? 0 : toMilliseconds(slot.spec.options.cancellationBackoff);
      if (backoffMs === 0 || !(await settlesWithin(slot.done, backoffMs))) slot.abort.abort();
    }
    const timeoutMs =
      slot.spec.options.cancellationTimeout === undefined ? DEFAULT_CANCELLATION_TIMEOUT_MS : toMilliseconds(slot.spec.options.cancellationTimeout);
    if (!(await settlesWithin(slot.done, timeoutMs))) {
      const meta = body.metadata ?? {};
      this.options.logger.warn(
        { namespace: meta.namespace, name: meta.name, handler: slot.spec.id, timeoutMs },
        `daemon ${slot.spec.id} did not exit within its cancellation timeout; abandoning it`,
      );
      this.options.poster.post(body, 'Warning', 'DaemonAbandoned', `${slot.spec.id} did not stop within ${Math.round(timeoutMs / 1000)} s`);
    }
  }
}
