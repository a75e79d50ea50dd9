import type { Resource } from '../api/resource.js';
import type { KubeObject } from '../objects/kube-object.js';
import { objectParts } from './object-parts.js';
import type { Logger } from '../observability/logger.js';
import type { IndexContext, IndexSpec } from './cache-contract.js';
import { matchesObject } from './filters.js';

/**
 * One object's contribution to an index: the index function's values by key, or undefined when the
 * object does not pass the index's filters or the function fails. A failure (a throw, a promise, or
 * anything but a plain object) is logged once per object (`failing` remembers which) until the
 * function succeeds for it again; it is not retried: the next event of the object computes it anew.
 */
export function indexContribution(
  spec: IndexSpec,
  object: KubeObject,
  resource: Resource,
  logger: Logger,
  failing: Set<string>,
): Record<string, unknown> | undefined {
  const meta = object.metadata ?? {};
  const uid = meta.uid ?? '';
  if (!matchesObject(object, spec.options)) {
    failing.delete(uid);
    return undefined;
  }
  const objectLogger = logger.child({ namespace: meta.namespace, name: meta.name, index: spec.id });
  try {
    const result = spec.fn(indexContext(object, resource, objectLogger));
    if (result === undefined || result === null) {
      failing.delete(uid);
      return undefined;
    }
    if (typeof (result as { then?: unknown }).then === 'function')
      throw new Error('it returned a promise: index functions must be synchronous');
    if (typeof result !== 'object' || Array.isArray(result))
      throw new Error(
        `it returned ${Array.isArray(result) ? 'an array' : typeof result}: return an object of values by key, or undefined`,
      );
    failing.delete(uid);
    return result;
  } catch (thrown) {
    if (!failing.has(uid)) {
      failing.add(uid);
      const message = thrown instanceof Error ? thrown.message : String(thrown);
      objectLogger.error(
        { err: thrown instanceof Error ? thrown : undefined },
        `index ${spec.id} failed for ${meta.namespace ? `${meta.namespace}/` : ''}${meta.name ?? uid}: ${message}; the object contributes nothing until its next change indexes it`,
      );
    }
    return undefined;
  }
}

function indexContext(body: KubeObject, resource: Resource, logger: Logger): IndexContext {
  return { ...objectParts(body), logger, resource };
}
