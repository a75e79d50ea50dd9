import type { ApiClient } from '../api/api-client.js';
import type { Resource } from '../api/resource.js';
import type { DaemonContext, ObjectContext } from '../intents/handler-specs.js';
import { objectContext } from '../intents/object-context.js';
import { defineMemo, ObjectMemos } from '../intents/memo.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';

/** What a daemon's context is made of besides the object. */
export interface DaemonContextParts {
  logger: Logger;
  resource: Resource;
  client: ApiClient;
  /** Aborted after `cancellationBackoff` once a stop is requested. */
  signal: AbortSignal;
  /** Resolves as soon as a stop is requested. */
  stopped: Promise<void>;
  retry: number;
  /** memo: the operator's per-object memos (`ctx.memo`). */
  memos?: ObjectMemos;
}

/**
 * A daemon's context: `body` and the fields derived from it read the newest state (`read()`) each
 * time. `events` is built on use too, so it is about the newest state and posts through the operator
 * whose work runs the daemon (the `DaemonContext` type does not list it yet).
 */
export function liveDaemonContext(
  read: () => KubeObject,
  parts: DaemonContextParts,
): DaemonContext {
  const { logger, resource, client, signal, stopped, retry } = parts;
  // Without the memo: it is defined once below, so every read gives the same memo.
  const now = () => objectContext(read(), logger, resource, client);
  const context: Omit<DaemonContext, 'memo'> & Pick<ObjectContext, 'events'> = {
    get body() {
      return read();
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
    get events() {
      return now().events;
    },
    // Read cache and indexes.
    get cache() {
      return now().cache;
    },
    get indexes() {
      return now().indexes;
    },
    logger,
    resource,
    client,
    signal,
    stopped,
    retry,
  };
  return defineMemo(context, parts.memos ?? new ObjectMemos(), read().metadata?.uid ?? '');
}
