import { inSpan } from '../observability/tracing.js';
import { ApiError } from '../api/api-error.js';
import type { ObjectApi } from '../api/object-api.js';
import { withTimeLimit } from '../clock/time-limit.js';
import { asError, describeError, PermanentError } from '../intents/errors.js';
import { matchesObject } from '../intents/filters.js';
import type { ObjectMemos } from '../intents/memo.js';
import { objectContext } from '../intents/object-context.js';
import type { OwnedChange, OwnedSpec } from '../intents/owned-specs.js';
import { retryDelayMs } from '../intents/retry-delay.js';
import { emptyPatch, mergeInto, type Patch } from '../intents/patch.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import { noMetrics, type Metrics } from '../observability/metrics.js';
import type { ProcessResult } from '../reactor/reactor.js';
import { Identity } from '../state/identity.js';
import type { ChangeBatch } from './change-processor-options.js';
import type { OwnWrite } from './object-memory.js';
import { coalesceOwnedChange, type PendingOwnedChanges } from './owned-changes.js';
import { guardHandlerPatch } from './patch-guard.js';
import { writePatch, WriteSuperseded } from './patch-writer.js';
import { freshest } from './read-your-writes.js';

export interface OwnedProcessorOptions {
  /** The owner resource's API: the owner's patch is written through it. */
  api: ObjectApi;
  handlers: readonly OwnedSpec[];
  logger: Logger;
  metrics?: Metrics;
  /** The operator's handler timeout: past it a run's signal aborts and it counts as failed (and is retried). */
  attemptTimeoutMs?: number;
  /** Whose bookkeeping a handler's patch must leave alone. */
  identity?: Identity;
  /** The time read-your-writes compares with. Default `Date.now`. */
  now?: () => number;
  /** The operator's per-object memos: `ctx.memo` and `when` filters see the owner's. */
  memos?: ObjectMemos;
}

/**
 * Runs the `@on.owned` handlers of one owner resource. Child changes are offered per owner uid (and
 * handler) as they arrive; the owner's next reactor run takes them all, so runs are serialized with
 * the owner's other handlers and child events arriving before a run starts merge into it.
 *
 * A run skips owners being deleted. A handler that fails is logged with the owner's namespace/name and
 * its id, its patch is not sent, and its child changes wait for a retry of the owner (1 s, doubling to
 * 60 s; a TemporaryError's own delay), merged with any that arrive meanwhile; a PermanentError is not
 * retried. The other handlers' patches go out together in one merge PATCH (status on its
 * subresource); when that write fails, the run's changes wait for a retry too. The written owner is
 * kept until the watch delivers it (read-your-writes), as change handlers' writes are.
 */
export class OwnedProcessor {
  /** Owner uid -> handler id -> the child changes waiting for the owner's next run. */
  private readonly pending = new Map<string, Map<string, PendingOwnedChanges>>();
  private readonly ownWrites = new Map<string, OwnWrite>();
  /** Failures in a row, by `<owner uid> <handler id>` (or `<owner uid> ` for the write): the retry backoff. */
  private readonly failures = new Map<string, number>();
  private readonly metrics: Metrics;
  private readonly identity: Identity;
  private readonly now: () => number;

  constructor(private readonly options: OwnedProcessorOptions) {
    this.metrics = options.metrics ?? noMetrics;
    this.identity = options.identity ?? Identity.DEFAULT;
    this.now = options.now ?? Date.now;
  }

  /** The handlers this processor runs. */
  get handlers(): readonly OwnedSpec[] {
    return this.options.handlers;
  }

  /** Queues a child change for its owner's next run; the caller then wakes the owner in the reactor. */
  offer(ownerUid: string, handlerId: string, change: OwnedChange): void {
    let byHandler = this.pending.get(ownerUid);
    if (!byHandler) this.pending.set(ownerUid, (byHandler = new Map()));
    let changes = byHandler.get(handlerId);
    if (!changes) byHandler.set(handlerId, (changes = new Map()));
    coalesceOwnedChange(changes, change);
  }

  /** Owners with child changes waiting. */
  get waiting(): number {
    return this.pending.size;
  }

  /** Drops what it keeps about an owner: deleted, or gone to another replica (sharding). */
  forget(uid: string): void {
    this.pending.delete(uid);
    this.ownWrites.delete(uid);
    for (const key of this.failures.keys())
      if (key.startsWith(`${uid} `)) this.failures.delete(key);
  }

  /** One reactor run of an owner: its waiting child changes, if any, go to the handlers now; asks for a retry when some failed. */
  async process(batch: ChangeBatch): Promise<ProcessResult> {
    const { uid, latest } = batch;
    if (latest.type === 'DELETED') return this.forget(uid);
    const own = this.ownWrites.get(uid);
    const fresh = freshest(own, batch.events, latest.object, this.now());
    if (own && fresh.caughtUp) this.ownWrites.delete(uid);
    const due = this.pending.get(uid);
    if (!due) return;
    this.pending.delete(uid);
    const body = fresh.body;
    // A deletion in progress is the delete handlers' business; its children are going too.
    if (body.metadata?.deletionTimestamp) return;
    const patch: Record<string, unknown> = {};
    let retryInMs: number | undefined;
    const retryIn = (ms: number): void => void (retryInMs = Math.min(retryInMs ?? ms, ms));
    const ran = new Map<string, PendingOwnedChanges>();
    for (const handler of this.options.handlers) {
      const changes = due.get(handler.id);
      if (!changes || changes.size === 0 || batch.signal.aborted) continue;
      if (
        !matchesObject(body, handler.options, {
          resource: this.options.api.resource,
          memos: this.options.memos,
        })
      )
        continue;
      const outcome = await this.invoke(handler, body, [...changes.values()], batch.signal);
      const key = `${uid} ${handler.id}`;
      if (outcome.retry) {
        this.putBack(uid, handler.id, changes);
        retryIn(this.failedAgain(key, outcome.error));
        continue;
      }
      this.failures.delete(key);
      ran.set(handler.id, changes);
      if (outcome.patch) mergeInto(patch, outcome.patch);
    }
    if (batch.signal.aborted) return;
    if (await this.write(body, patch, batch.signal)) this.failures.delete(`${uid} `);
    else {
      for (const [handlerId, changes] of ran) this.putBack(uid, handlerId, changes);
      retryIn(this.failedAgain(`${uid} `, undefined));
    }
    return retryInMs === undefined ? undefined : { requeueAfterMs: retryInMs, retry: true };
  }

  /** A run's changes wait again, before any that arrived since (those are newer). */
  private putBack(uid: string, handlerId: string, changes: PendingOwnedChanges): void {
    let byHandler = this.pending.get(uid);
    if (!byHandler) this.pending.set(uid, (byHandler = new Map()));
    const merged: PendingOwnedChanges = new Map(changes);
    for (const change of byHandler.get(handlerId)?.values() ?? [])
      coalesceOwnedChange(merged, change);
    byHandler.set(handlerId, merged);
  }

  /** Counts another failure under `key`; how long until the next attempt. */
  private failedAgain(key: string, error: Error | undefined): number {
    const failures = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, failures);
    return retryDelayMs(error, failures);
  }

  /** Calls one handler: its checked patch, or whether to retry it (it failed, other than permanently). */
  private async invoke(
    handler: OwnedSpec,
    body: KubeObject,
    changes: readonly OwnedChange[],
    signal: AbortSignal,
  ): Promise<{ patch?: Patch; retry?: boolean; error?: Error }> {
    const meta = body.metadata ?? {};
    const logger = this.options.logger.child({
      namespace: meta.namespace,
      name: meta.name,
      handler: handler.id,
    });
    const last = changes[changes.length - 1]!;
    const patch = emptyPatch();
    const began = performance.now();
    let failure: Error | undefined;
    try {
      const { api } = this.options;
      const attributes = {
        'konductor.handler.id': handler.id,
        'konductor.owned.changes': changes.length,
      };
      await inSpan(`owned ${handler.id}`, { attributes }, () =>
        withTimeLimit(
          (attemptSignal) =>
            handler.fn({
              ...objectContext(body, logger, api.resource, api.client, this.options.memos),
              patch,
              child: last.child,
              event: last.event,
              changes,
              signal: attemptSignal,
            }),
          this.options.attemptTimeoutMs,
          signal,
        ),
      );
    } catch (thrown) {
      failure = asError(thrown);
    }
    this.metrics.observe?.('handler_duration_seconds', (performance.now() - began) / 1000, {
      handler: handler.id,
    });
    this.metrics.increment('handler_runs_total', {
      handler: handler.id,
      result: failure ? 'failure' : 'success',
    });
    const where = `${meta.namespace ? `${meta.namespace}/` : ''}${meta.name ?? ''}`;
    if (failure) {
      const retry = !(failure instanceof PermanentError);
      logger.error(
        { err: failure },
        `owned handler ${handler.id} failed for ${where} (its patch is not sent; ${retry ? 'retried' : 'not retried: permanent'}): ${describeError(failure)}`,
      );
      return retry ? { retry, error: failure } : {};
    }
    let guarded;
    try {
      // A copy: an abandoned (timed-out) run may still be changing the patch it was given.
      guarded = guardHandlerPatch(structuredClone(patch), body, this.identity);
    } catch (error) {
      guarded = { problem: `the handler's patch cannot be sent: ${describeError(error)}` };
    }
    if (guarded.problem !== undefined) {
      logger.error(`owned handler ${handler.id} for ${where}: ${guarded.problem}`);
      return {}; // a patch that can never be sent: running again would not change that
    }
    return { patch: guarded.patch };
  }

  /** Sends the merged patch (nothing when empty); false when it failed (logged; an owner gone meanwhile is no failure). */
  private async write(
    body: KubeObject,
    patch: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<boolean> {
    const meta = body.metadata ?? {};
    try {
      const onWrite = (written: KubeObject): void => this.remember(written);
      await writePatch(this.options.api, body, patch, { onWrite, signal });
      return true;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return true;
      if (error instanceof WriteSuperseded) return true; // its new owner handles it
      this.options.logger.error(
        { namespace: meta.namespace, name: meta.name, err: describeError(error) },
        `writing the owned handlers' patch of ${meta.namespace ? `${meta.namespace}/` : ''}${meta.name ?? ''} failed; their changes are retried`,
      );
      return false;
    }
  }

  /** Keeps our write until the watch delivers it (read-your-writes). */
  private remember(written: KubeObject): void {
    const { uid, resourceVersion } = written.metadata ?? {};
    if (uid && resourceVersion)
      this.ownWrites.set(uid, { resourceVersion, body: written, at: this.now() });
  }
}
