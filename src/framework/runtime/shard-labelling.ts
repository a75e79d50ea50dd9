import type { AdmissionSpec, MutationContext } from '../intents/admission-specs.js';
import type { HandlerSpec } from '../intents/handler-specs.js';
import { memberFor, shardKey } from '../sharding/ring.js';
import type { ShardLabels } from '../sharding/shard-labels.js';

/** The ring's live members as this replica last read them: what the labelling webhook assigns by. */
export class LiveRing {
  members: readonly string[] = [];
}

/**
 * Mutating handlers that label each new object of the handled resources with the member the ring
 * wants, so that it needs no write of its own from the coordinator. One per resource name the
 * handlers use. They run on CREATE only, ignore failures (`failurePolicy: Ignore`: the coordinator
 * labels what they miss), and leave alone an object that has a label, or no name yet (`generateName`),
 * or arrives while this replica knows no live member.
 */
export function shardLabellingSpecs(
  handlers: readonly HandlerSpec[],
  labels: ShardLabels,
  ring: LiveRing,
): AdmissionSpec[] {
  const selectors = new Map<string, HandlerSpec['resource']>();
  for (const spec of handlers)
    selectors.set(`${spec.resource.apiVersion}|${spec.resource.name.toLowerCase()}`, spec.resource);
  return [...selectors.values()].map((resource) => ({
    kind: 'mutate',
    id: `konductor-shard.${resource.name.toLowerCase()}.${resource.apiVersion.replace(/[^a-z0-9.-]+/gi, '-').toLowerCase()}`,
    resource,
    options: { operations: ['CREATE'], failurePolicy: 'Ignore', timeoutSeconds: 2 },
    fn: (context: MutationContext) => label(context, labels, ring),
  }));
}

function label(context: MutationContext, labels: ShardLabels, ring: LiveRing): void {
  if (context.operation !== 'CREATE' || !context.name || context.subresource) return;
  if (labels.memberOf(context.body) !== undefined) return;
  const member = memberFor(
    shardKey(context.resource, context.namespace, context.name),
    ring.members,
  );
  if (member !== undefined) context.patch.metadata.labels[labels.shard] = member;
}
