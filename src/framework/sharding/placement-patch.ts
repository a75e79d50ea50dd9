import type { ApiClient } from '../api/api-client.js';
import { ApiError } from '../api/api-error.js';
import { ObjectApi } from '../api/object-api.js';
import { resourceId, type Resource } from '../api/resource.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Placement } from './placement.js';
import type { ShardLabels } from './shard-labels.js';

/** What a placement is written with. */
export interface PlacementWriter {
  client: ApiClient;
  labels: ShardLabels;
  metrics: Metrics;
  logger: Logger;
}

/**
 * Writes one placement: the shard or drain label, only on the object's version it was decided on.
 * A 404 (deleted meanwhile) is no failure; a 409 (changed since) fails quietly, anything else with a
 * warning saying when it is tried again (`retrySeconds`).
 */
export async function patchPlacement(
  { client, labels, metrics, logger }: PlacementWriter,
  resource: Resource,
  object: KubeObject,
  placement: Placement,
  retrySeconds: number,
): Promise<void> {
  if (placement.action === 'keep') return;
  const namespace = object.metadata?.namespace;
  const name = object.metadata?.name ?? '';
  const version = object.metadata?.resourceVersion;
  const body =
    placement.action === 'assign'
      ? labels.assignPatch(placement.member, version)
      : labels.drainPatch(version);
  try {
    await new ObjectApi(client, resource).mergePatch(namespace, name, body);
    metrics.increment('shard_moves_total', { action: placement.action });
  } catch (error) {
    if (ApiError.isNotFound(error)) return;
    if (!ApiError.isConflict(error))
      logger.warn(
        {
          namespace,
          name,
          resource: resourceId(resource),
          err: error instanceof Error ? error.message : String(error),
        },
        `could not ${placement.action} the object for sharding; trying again in ${retrySeconds} s`,
      );
    throw error;
  }
}
