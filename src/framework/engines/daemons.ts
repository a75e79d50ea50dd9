import { setTimeout as sleep } from 'node:timers/promises';
import { describeError, TemporaryError } from '../handling/errors.js';
import { matchesObject } from '../handling/filters.js';
import type { ApiClient } from '../api/api-client.js';
import type { Resource } from '../api/resource.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { EventPoster } from '../posting/events.js';
import type { DaemonContext, DaemonSpec } from '../registry/handler-specs.js';
import type { KubeObject } from '../watching/events.js';
import { toMilliseconds } from './duration.js';
import { objectContext } from './object-context.js';

const DEFAULT_CANCELLATION_TIMEOUT_MS = 60_000;
const MAX_RESTART_DELAY_MS = 60_000;

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
 * ended; one that throws is restarted with backoff (or after a TemporaryError's delay). Stopping
 * resolves `stopped` at once, aborts `signal` after `cancellationBackoff`, and waits up to
 * `cancellationTimeout` for the task to end before abandoning it with a warning.
 */
export class DaemonEngine {
  private readonly objects = new Map<string, DaemonObject>();
  private stopping = false;

  constructor(private readonly options: DaemonEngineOptions) {}

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
      if (matches && !slot) entry.slots.set(spec.id, this.start(entry, spec));
      else if (!matches && slot) {
        void this.stopSlot(slot, entry.body);
        entry.slots.delete(spec.id);
      }
    }
  }

  /** Stops an object's daemons; resolves once they exited or were abandoned. */
  async stopObject(uid: string): Promise<void> {
    const entry = this.objects.get(uid);
    if (!entry) return;
    await Promise.all([...entry.slots.values()].map((slot) => this.stopSlot(slot, entry.body)));
    this.objects.delete(uid);
  }

  /** Stops every daemon (operator shutdown, lost leadership). */
  async stopAll(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.objects.keys()].map((uid) => this.stopObject(uid)));
  }

  /** Daemons currently running (not finished). */
  get running(): number {
    let count = 0;
    for (const entry of this.objects.values()) for (const slot of entry.slots.values()) if (!slot.finished) count += 1;
    return count;
  }

  private start(entry: DaemonObject, spec: DaemonSpec): DaemonSlot {
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
    slot.done = this.loop(entry, slot);
    return slot;
  }

  private async loop(entry: DaemonObject, slot: DaemonSlot): Promise<void> {
    const { spec } = slot;
    const meta = (): KubeObject['metadata'] => entry.body.metadata ?? {};
    const logger = this.options.logger.child({ namespace: meta()?.namespace, name: meta()?.name, handler: spec.id });
    const pause = (ms: number): Promise<void> =>
      Promise.race([sleep(ms, undefined, { signal: slot.abort.signal }).catch(() => undefined), slot.stopped]);
    if (spec.options.initialDelay !== undefined) await pause(toMilliseconds(spec.options.initialDelay));
    let retry = 0;
    while (!slot.stopRequested) {
      const context = liveContext(entry, logger, this.options.resource, this.options.client, slot, retry);
      try {
        await spec.fn(context);
        logger.info(`daemon ${spec.id} ended`);
        break;
      } catch (error) {
        if (slot.stopRequested) break;
        retry += 1;
        const delay =
          error instanceof TemporaryError
            ? error.delay * 1000
            : spec.options.backoff !== undefined
              ? spec.options.backoff * 1000
              : Math.min(MAX_RESTART_DELAY_MS, 1000 * 2 ** (retry - 1));
        const message = describeError(error);
        logger.error({ err: message, retry }, `daemon ${spec.id} failed; restarting in ${Math.round(delay / 1000)} s: ${message}`);
        this.options.poster.post(entry.body, 'Warning', 'DaemonFailed', `${spec.id} failed, restarting: ${message}`);
        await pause(delay);
      }
    }
    slot.finished = true;
  }

  private async stopSlot(slot: DaemonSlot, body: KubeObject): Promise<void> {
    if (!slot.stopRequested) {
      slot.stopRequested = true;
      slot.requestStop();
      const backoffMs = slot.spec.options.cancellationBackoff === undefined ? 0 : toMilliseconds(slot.spec.options.cancellationBackoff);
      if (backoffMs > 0) {
        const wait = new AbortController();
        const exited = await Promise.race([slot.done.then(() => true), sleep(backoffMs, false, { signal: wait.signal }).catch(() => false)]);
        wait.abort();
        if (!exited) slot.abort.abort();
      } else {
        slot.abort.abort();
      }
    }
    const timeoutMs =
      slot.spec.options.cancellationTimeout === undefined ? DEFAULT_CANCELLATION_TIMEOUT_MS : toMilliseconds(slot.spec.options.cancellationTimeout);
    const guard = new AbortController();
    const exited = await Promise.race([
      slot.done.then(() => true),
      sleep(timeoutMs, false, { signal: guard.signal }).catch(() => false),
    ]);
    guard.abort();
    if (!exited) {
      const meta = body.metadata ?? {};
      this.options.logger.warn(
        { namespace: meta.namespace, name: meta.name, handler: slot.spec.id, timeoutMs },
        `daemon ${slot.spec.id} did not exit within its cancellation timeout; abandoning it`,
      );
      this.options.poster.post(body, 'Warning', 'DaemonAbandoned', `${slot.spec.id} did not stop within ${Math.round(timeoutMs / 1000)} s`);
    }
  }
}
