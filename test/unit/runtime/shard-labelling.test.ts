import type { MutationContext } from '../../../src/framework/intents/admission-specs.js';
import type { HandlerSpec } from '../../../src/framework/intents/handler-specs.js';
import { LiveRing, shardLabellingSpecs } from '../../../src/framework/runtime/shard-labelling.js';
import { memberFor, shardKey } from '../../../src/framework/sharding/ring.js';
import { ShardLabels } from '../../../src/framework/sharding/shard-labels.js';

const labels = new ShardLabels('konductor.dev');
const resource = { group: 'example.com', version: 'v1', plural: 'widgets' };

function handler(apiVersion: string, name: string): HandlerSpec {
  return {
    kind: 'create',
    id: `h-${name}`,
    resource: { apiVersion, name },
    options: {},
  } as unknown as HandlerSpec;
}

/** Runs a labelling handler on a create of `name`; returns the labels it patched. */
function admit(
  ring: LiveRing,
  overrides: Partial<MutationContext> = {},
): Record<string, unknown> | undefined {
  const [spec] = shardLabellingSpecs([handler('example.com/v1', 'widgets')], labels, ring);
  const patch = { metadata: { labels: {} as Record<string, unknown> } };
  spec!.fn({
    operation: 'CREATE',
    name: 'w-1',
    namespace: 'team-a',
    subresource: undefined,
    body: { metadata: { name: 'w-1', namespace: 'team-a' } },
    resource,
    patch,
    ...overrides,
  } as unknown as MutationContext);
  return patch.metadata.labels;
}

describe('labelling new objects at creation (sharding with webhooks)', () => {
  it('registers one mutating handler per resource name the handlers use, on CREATE, ignoring failures', () => {
    const specs = shardLabellingSpecs(
      [
        handler('example.com/v1', 'widgets'),
        handler('example.com/v1', 'Widgets'),
        handler('v1', 'configmaps'),
      ],
      labels,
      new LiveRing(),
    );
    expect(specs.map((spec) => spec.id)).toEqual([
      'konductor-shard.widgets.example.com-v1',
      'konductor-shard.configmaps.v1',
    ]);
    expect(specs[0]!.options).toMatchObject({ operations: ['CREATE'], failurePolicy: 'Ignore' });
  });

  it('labels a new object with the member the ring wants, as the coordinator would', () => {
    const ring = new LiveRing();
    ring.members = ['a', 'b', 'c'];
    const expected = memberFor(shardKey(resource, 'team-a', 'w-1'), ring.members);
    expect(admit(ring)).toEqual({ 'konductor.dev/shard': expected });
  });

  it('leaves an object alone while no member is known, without a name yet, or already labelled', () => {
    const ring = new LiveRing();
    expect(admit(ring)).toEqual({});
    ring.members = ['a'];
    expect(admit(ring, { name: '' })).toEqual({});
    expect(
      admit(ring, {
        body: { metadata: { labels: { 'konductor.dev/shard': 'b' } } },
      } as Partial<MutationContext>),
    ).toEqual({});
  });
});
