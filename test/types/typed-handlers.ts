/**
 * Type-level specification, checked by `npm run typecheck` (never run): handler contexts carry the
 * object types `konductor types` generates end to end (`Widget` is generated from
 * test/fixtures/crds-types/widgets.yaml; types-drift.test.ts keeps it current). Each line after a
 * `@ts-expect-error` is a program that must NOT compile; if it ever compiles, tsc reports the
 * unused directive and the check fails.
 */
import {
  daemon,
  on,
  timer,
  type ChangeContext,
  type DaemonContext,
  type EventContext,
  type KubeObject,
  type Patch,
  type TimerContext,
} from '../../src/framework/index.js';
import type { FieldChangeContext } from '../../src/framework/intents/handler-specs.js';
import type { Widget, WidgetSpec, WidgetStatus } from './generated/widgets.js';

/** Compiles only when `value` is assignable to `T`. */
function is<T>(value: T): T {
  return value;
}

export class TypedWidgets {
  @on.create<Widget>('example.com/v1', 'widgets', { when: (widget) => widget.spec.size > 0 })
  async created({ spec, status, body, patch, old }: ChangeContext<Widget>): Promise<void> {
    is<number>(spec.size);
    is<string | null | undefined>(status?.phase);
    is<'example.com/v1'>(body.apiVersion);
    is<WidgetSpec | undefined>(old?.spec);
    // @ts-expect-error template may be absent from the patch: set it whole
    patch.spec.template.image = 'web:2';
    patch.status.phase = 'Ready';
    patch.status.phase = null; // merge patch: null deletes
    patch.spec.template = { image: 'web:2', extra: 'kept: the CRD preserves unknown fields here' };
    patch.spec.color = 'blue';
    patch.spec.port = 'http';
    patch.spec.port = 8080;
    patch.spec.labels = { tier: 'gold', stale: null };
    // @ts-expect-error phase is a string
    patch.status.phase = 42;
    // @ts-expect-error color is 'red' | 'blue'
    patch.spec.color = 'green';
    // @ts-expect-error port is a number or a string
    patch.spec.port = true;
    // @ts-expect-error the spec is closed: the CRD prunes unknown fields
    patch.spec.colour = 'red';
    // @ts-expect-error the status has no such field
    patch.status.phaze = 'Ready';
    // @ts-expect-error size is a number
    is<string>(spec.size);
  }

  @on.field<Widget, 'spec.size'>('example.com/v1', 'widgets', 'spec.size')
  async resized({ old, new: size }: FieldChangeContext<Widget, 'spec.size'>): Promise<void> {
    is<number | undefined>(old);
    is<number | undefined>(size);
  }

  @on.field<Widget>('example.com/v1', 'widgets', 'spec.port')
  async moved({ new: port }: FieldChangeContext<Widget, 'spec.port'>): Promise<void> {
    is<number | string | undefined>(port);
  }

  @on.update<Widget>('example.com/v1', 'widgets')
  async updated({ old, new: current }: ChangeContext<Widget>): Promise<void> {
    is<number | undefined>(current?.spec.size);
    is<Record<string, string> | undefined>(old?.metadata?.labels);
  }

  @on.deletion<Widget>('example.com/v1', 'widgets')
  async deleted({ spec }: ChangeContext<Widget>): Promise<void> {
    is<number>(spec.size);
  }

  @timer<Widget>('example.com/v1', 'widgets', { interval: (widget) => widget.spec.size * 60 })
  async tick({ spec, patch }: TimerContext<Widget>): Promise<void> {
    patch.status.replicas = spec.size;
    // @ts-expect-error replicas is a number
    patch.status.replicas = 'three';
  }

  @on.event<Widget>('example.com/v1', 'widgets')
  async observed({ body }: EventContext<Widget>): Promise<void> {
    is<number>(body.spec.size);
  }

  @daemon<Widget>('example.com/v1', 'widgets')
  async watch({ status }: DaemonContext<Widget>): Promise<void> {
    is<number | undefined>(status?.replicas);
  }
}

interface Gadget {
  apiVersion: 'example.com/v1';
  kind: 'Gadget';
  metadata: NonNullable<KubeObject['metadata']>;
  spec: { wheels: number };
}

export class MismatchedHandlers {
  // @ts-expect-error a Widget handler cannot take a Gadget's context
  @on.create<Widget>('example.com/v1', 'widgets')
  async created(_context: ChangeContext<Gadget>): Promise<void> {}

  // @ts-expect-error spec.size is a number, not a string
  @on.field<Widget, 'spec.size'>('example.com/v1', 'widgets', 'spec.size')
  async resized(_context: ChangeContext<Widget, WidgetStatus, string>): Promise<void> {}

  // @ts-expect-error a Widget timer cannot take a Gadget's context
  @timer<Widget>('example.com/v1', 'widgets', { interval: 60 })
  async tick(_context: TimerContext<Gadget>): Promise<void> {}

  // @ts-expect-error with an object type, a field is named through on.field (or the Field type argument)
  @on.update<Widget>('example.com/v1', 'widgets', { field: 'spec.size' })
  async updated(_context: ChangeContext<Widget>): Promise<void> {}
}

/** The spec-and-status form keeps working, now with a typed patch. */
export class SpecTypedWidgets {
  @on.create('example.com/v1', 'widgets')
  async created({
    spec,
    patch,
    new: current,
  }: ChangeContext<WidgetSpec, WidgetStatus>): Promise<void> {
    is<number>(spec.size);
    is<unknown>(current);
    patch.status.phase = 'Ready';
    // @ts-expect-error phase is a string
    patch.status.phase = 42;
  }

  @on.create('example.com/v1', 'widgets')
  async untyped({ spec, patch }: ChangeContext): Promise<void> {
    is<unknown>(spec.anything);
    patch.status.anything = 42;
  }
}

/** `Patch` alone stays the loose default. */
export function loosePatch(patch: Patch): void {
  patch.status.phase = 42;
  patch.spec.size = null;
}
