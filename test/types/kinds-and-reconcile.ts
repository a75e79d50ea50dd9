/**
 * Type-level specification of kinds and `@on.reconcile` (checked by `npm run typecheck`, never run):
 * a kind carries its object type to the decorator's context, `owns`, the client and the cache.
 * Each line after a `@ts-expect-error` must NOT compile.
 */
import {
  defineKind,
  kinds,
  on,
  watch,
  type ChangeContext,
  type CustomObject,
  type ReconcileContext,
} from '../../src/framework/index.js';

type Widget = CustomObject<{ size: number }, { ready?: boolean }>;
const Widget = defineKind<Widget>('example.com/v1', 'Widget', 'widgets');

export class Widgets {
  @on.reconcile(Widget, {
    owns: [kinds.ConfigMap],
    watches: [watch(kinds.Namespace, (ns) => ({ name: ns.metadata?.name ?? '' }))],
    requeueAfter: 'PT1M',
  })
  async reconcile({
    spec,
    status,
    patch,
    client,
    cache,
    conditions,
  }: ReconcileContext<Widget>): Promise<number> {
    const size: number = spec.size;
    const ready: boolean | undefined = status?.ready;
    patch.status.ready = size > 0 && ready !== false;
    // @ts-expect-error spec has no such field
    void spec.sizes;
    // @ts-expect-error status.ready is a boolean
    patch.status.ready = 'yes';
    const pod = await client.resource(kinds.Pod).get({ namespace: 'default', name: 'web' });
    const phase: string | undefined = pod.status?.phase;
    // @ts-expect-error timestamps arrive as strings, not Dates
    const started: Date | undefined = pod.status?.startTime;
    const map = cache.resource(kinds.ConfigMap).get({ namespace: 'default', name: 'settings' });
    const data: Record<string, string> | undefined = map?.data;
    conditions.set('Ready', true, { message: `${phase} ${String(started)} ${String(data)}` });
    return 30;
  }

  @on.create(Widget)
  created({ spec }: ChangeContext<Widget>): void {
    void spec.size;
  }

  // @ts-expect-error the context must be the kind's
  @on.update(kinds.Pod)
  updated(_context: ChangeContext<Widget>): void {}

  @on.field(kinds.Deployment, 'spec.replicas')
  scaled({
    new: replicas,
  }: ChangeContext<
    kinds.Deployment,
    NonNullable<kinds.Deployment['status']>,
    number | undefined
  >): void {
    void replicas;
  }
}
