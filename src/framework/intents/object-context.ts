import type { ApiClient } from '../api/api-client.js';
import type { Resource } from '../api/resource.js';
import type { Logger } from '../observability/logger.js';
import { objectEvents } from '../posting/events.js';
import type { ObjectContext } from './handler-specs.js';
import type { KubeObject } from '../objects/kube-object.js';
import { currentCacheAccess } from './cache-scope.js';
import { defineMemo, ObjectMemos } from './memo.js';
import { objectParts } from './object-parts.js';

/**
 * The fields every per-object handler context shares, read from one state of the object. `events`
 * posts through the operator whose work builds the context (found through the async context).
 * `memo` is the object's memo in `memos`, made on first read (a memo of its own without `memos`).
 */
export function objectContext(
  body: KubeObject,
  logger: Logger,
  resource: Resource,
  client: ApiClient,
  memos?: ObjectMemos,
): ObjectContext {
  const parts = objectParts(body);
  const context = {
    ...parts,
    logger,
    resource,
    client,
    events: objectEvents(body),
    // Read cache: the operator whose work builds the context.
    ...currentCacheAccess(),
  };
  return defineMemo(context, memos ?? new ObjectMemos(), parts.uid);
}
