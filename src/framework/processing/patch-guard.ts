import { hasFinalizer } from '../state/finalizers.js';
import { Identity } from '../state/identity.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Patch } from '../intents/patch.js';

/**
 * Metadata the API server or the framework owns. A merge PATCH carrying `resourceVersion` becomes a
 * precondition that fails on every retry; `uid`, `name` or `namespace` address another object.
 */
const OWNED_METADATA = [
  'uid',
  'resourceVersion',
  'name',
  'namespace',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'managedFields',
  'selfLink',
] as const;

/** A handler's patch made safe to send, or why it is refused. */
export type GuardedPatch =
  { patch: Patch; problem?: undefined } | { patch?: undefined; problem: string };

/**
 * Keeps handlers from breaking the bookkeeping of the operator's `identity`:
 * - a patch that sets server-owned metadata (`uid`, `resourceVersion`, …), one of the framework's
 *   annotations or its status field (`status["<identity>"]`) is refused whole, with a message naming the fields;
 * - a patch that replaces `metadata.finalizers` is accepted, with our finalizer kept in the new list
 *   while the object holds it (a merge PATCH replaces lists, so it would otherwise be dropped and the
 *   object could go without its delete handlers).
 */
export function guardHandlerPatch(
  patch: Patch,
  body: KubeObject,
  identity: Identity = Identity.DEFAULT,
): GuardedPatch {
  const metadata = patch.metadata;
  const refused = OWNED_METADATA.filter((key) => metadata[key] !== undefined).map(
    (key) => `metadata.${key}`,
  );
  for (const key of Object.keys(metadata.annotations)) {
    if (identity.isFrameworkKey(key)) refused.push(`metadata.annotations['${key}']`);
  }
  // Status storage keeps the bookkeeping there (and it is read with annotation storage too).
  const status: unknown = patch.status;
  if (status !== null && typeof status === 'object' && Object.hasOwn(status, identity.statusKey))
    refused.push(`status["${identity.statusKey}"]`);
  if (refused.length > 0) {
    return {
      problem:
        `the handler's patch sets ${refused.join(', ')}, which the API server or the framework owns; ` +
        'the patch was not sent: remove those fields from the handler',
    };
  }
  if (!('finalizers' in metadata) || !hasFinalizer(body, identity)) return { patch };
  const requested = metadata.finalizers;
  const list = Array.isArray(requested)
    ? requested.filter((item): item is string => typeof item === 'string')
    : [];
  const finalizer = identity.finalizer;
  return {
    patch: {
      ...patch,
      metadata: { ...metadata, finalizers: list.includes(finalizer) ? list : [...list, finalizer] },
    },
  };
}
