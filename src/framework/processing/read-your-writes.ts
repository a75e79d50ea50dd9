import type { KubeObject } from '../objects/kube-object.js';
import type { ObjectEvent } from '../watching/watch-events.js';
import type { OwnWrite } from './object-memory.js';

/** How long we trust our own write over the watch when resourceVersions cannot be compared. */
export const OWN_WRITE_TRUST_MS = 5_000;

/** The newest known state of an object, and whether our own write is behind us (and can be forgotten). */
export interface Freshest {
  body: KubeObject;
  caughtUp: boolean;
}

/**
 * The newest known state: the watch's latest, unless our own later write has not come back through the
 * watch yet. Caught up when the watch delivered our write, or anything newer. resourceVersions are
 * opaque, but etcd's are integers: compare them when they are; otherwise trust our write for a few
 * seconds only, so a relist that skipped our exact version can never pin us to a stale copy.
 */
export function freshest(
  own: OwnWrite | undefined,
  events: readonly ObjectEvent<KubeObject>[],
  latest: KubeObject,
  now: number,
): Freshest {
  if (!own) return { body: latest, caughtUp: true };
  const version = latest.metadata?.resourceVersion;
  const caughtUp =
    events.some((e) => e.object.metadata?.resourceVersion === own.resourceVersion) ||
    (isInteger(version) && isInteger(own.resourceVersion)
      ? BigInt(version!) >= BigInt(own.resourceVersion)
      : now - own.at > OWN_WRITE_TRUST_MS);
  return caughtUp ? { body: latest, caughtUp } : { body: own.body, caughtUp };
}

function isInteger(value: string | undefined): boolean {
  return value !== undefined && /^\d+$/.test(value);
}
