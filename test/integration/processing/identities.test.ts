/**
 * Two operators built on Konductor handle the same objects: each under its own identity, with its own
 * diff-base, progress and finalizer, and neither taking the other's bookkeeping for a change.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { on, type ChangeContext } from '../../../src/framework/index.js';
import { Identity } from '../../../src/framework/state/identity.js';
import { startOperator, type RunningOperator } from '../../support/operators.js';
import {
  Widgets,
  type Widget,
  readWidget,
  getWidget,
  WIDGET_API_VERSION,
} from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { type HandlerClass } from '../../../src/framework/registry/registry.js';
import { widgetNamespace } from '../../support/widget-namespace.js';

const API = WIDGET_API_VERSION;

/** What one operator's handlers saw: creates by name, updates as `name:size`, deletes by name. */
interface Seen {
  created: string[];
  updated: string[];
  deleted: string[];
}

/** Handlers of one operator; its delete handler waits for `holdDeletes` (when given) before it returns. */
function handlersFor(seen: Seen, holdDeletes?: Promise<void>): HandlerClass {
  class Handlers {
    @on.create(API, 'widgets')
    async created({ name }: ChangeContext): Promise<void> {
      seen.created.push(name);
    }

    @on.update(API, 'widgets')
    async updated({ name, spec }: ChangeContext<{ size?: number }>): Promise<void> {
      seen.updated.push(`${name}:${spec.size}`);
    }

    @on.deletion(API, 'widgets')
    async deleted({ name }: ChangeContext): Promise<void> {
      await holdDeletes;
      seen.deleted.push(name);
    }
  }
  return Handlers;
}

const newSeen = (): Seen => ({ created: [], updated: [], deleted: [] });

/** The spec size an identity's diff-base says it handled last; undefined before its first handling. */
function handledSize(widget: Widget | undefined, identity: Identity): number | undefined {
  const raw = widget?.metadata?.annotations?.[identity.diffBaseKey];
  return raw === undefined
    ? undefined
    : (JSON.parse(raw) as { spec?: { size?: number } }).spec?.size;
}

/** Both identities have handled the object at `size`, and neither has a handler still pending. */
function bothHandled(
  widget: Widget | undefined,
  identities: readonly Identity[],
  size: number,
): boolean {
  const keys = Object.keys(widget?.metadata?.annotations ?? {});
  return identities.every(
    (identity) =>
      handledSize(widget, identity) === size &&
      !keys.some(
        (key) =>
          identity.isFrameworkKey(key) &&
          key !== identity.diffBaseKey &&
          key !== identity.managedMarker,
      ),
  );
}

/** The annotation keys of the essence an identity stored in its diff-base. */
function annotationsInDiffBase(widget: Widget, identity: Identity): string[] {
  const stored = JSON.parse(widget.metadata?.annotations?.[identity.diffBaseKey] ?? '{}') as {
    metadata?: { annotations?: Record<string, string> };
  };
  return Object.keys(stored.metadata?.annotations ?? {});
}

const settle = (ms = 500): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe.each([
  ['the default identity and one of its own', undefined, 'alpha.example.com'],
  ['two identities of their own', 'alpha.example.com', 'beta.example.com'],
])('two operators on the same objects: %s', (_, first, second) => {
  const identities = [Identity.parse(first ?? 'konductor.dev'), Identity.parse(second)];
  const running: RunningOperator[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((operator) => operator.stop()));
  });

  test('each runs its create and update handlers exactly once per change, and neither stores the other’s bookkeeping', async () => {
    const { kc, namespace } = await widgetNamespace('identities');
    const seen = [newSeen(), newSeen()];
    running.push(await startOperator(kc, namespace, [handlersFor(seen[0]!)], { identity: first }));
    running.push(await startOperator(kc, namespace, [handlersFor(seen[1]!)], { identity: second }));
    const widgets = new Widgets(kc, namespace);

    await widgets.create('shared', { size: 1 });
    await waitFor(async () => bothHandled(await readWidget(namespace, 'shared'), identities, 1), {
      what: 'both operators to handle the create',
    });
    await widgets.patchSpec('shared', { size: 2 });
    await waitFor(async () => bothHandled(await readWidget(namespace, 'shared'), identities, 2), {
      what: 'both operators to handle size 2',
    });
    await widgets.patchSpec('shared', { size: 3 });
    await waitFor(async () => bothHandled(await readWidget(namespace, 'shared'), identities, 3), {
      what: 'both operators to handle size 3',
    });
    await settle(); // room for a re-run caused by the other operator's writes to show up

    expect(seen.map(({ created, updated }) => ({ created, updated }))).toEqual([
      { created: ['shared'], updated: ['shared:2', 'shared:3'] },
      { created: ['shared'], updated: ['shared:2', 'shared:3'] },
    ]);
    const widget = await getWidget(namespace, 'shared');
    expect(identities.map((identity) => annotationsInDiffBase(widget, identity))).toEqual([[], []]);
  });

  test('both finalizers coexist on the object', async () => {
    const { kc, namespace } = await widgetNamespace('identities');
    running.push(await startOperator(kc, namespace, [handlersFor(newSeen())], { identity: first }));
    running.push(
      await startOperator(kc, namespace, [handlersFor(newSeen())], { identity: second }),
    );

    await new Widgets(kc, namespace).create('held');
    const finalizers = await waitFor<string[] | undefined>(
      async () => {
        const list = (await readWidget(namespace, 'held'))?.metadata?.finalizers ?? [];
        return list.length === 2 ? list : undefined;
      },
      { what: 'both finalizers' },
    );

    expect([...(finalizers ?? [])].sort()).toEqual(
      identities.map((identity) => identity.finalizer).sort(),
    );
  });

  test('deleting the object waits for both operators’ delete handlers; each runs once', async () => {
    const { kc, namespace } = await widgetNamespace('identities');
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const seen = [newSeen(), newSeen()];
    running.push(await startOperator(kc, namespace, [handlersFor(seen[0]!)], { identity: first }));
    running.push(
      await startOperator(kc, namespace, [handlersFor(seen[1]!, held)], { identity: second }),
    );
    const widgets = new Widgets(kc, namespace);
    await widgets.create('doomed');
    await waitFor(
      async () =>
        ((await readWidget(namespace, 'doomed'))?.metadata?.finalizers ?? []).length === 2,
      { what: 'both finalizers' },
    );

    try {
      await widgets.delete('doomed');
      // The first operator is done and its finalizer gone; the second's delete handler still holds the object.
      const waiting = await waitFor(
        async () => {
          const widget = await readWidget(namespace, 'doomed');
          return seen[0]!.deleted.length === 1 && widget?.metadata?.finalizers?.length === 1
            ? widget
            : undefined;
        },
        { what: "the first operator's delete handler and its finalizer's removal" },
      );
      expect(waiting?.metadata?.finalizers).toEqual([identities[1]!.finalizer]);
      expect(seen[1]!.deleted).toEqual([]);
    } finally {
      release();
    }
    await waitFor(async () => (await readWidget(namespace, 'doomed')) === undefined, {
      what: 'the object to be gone',
    });
    await settle(); // room for a duplicate run to show up

    expect(seen.map((s) => s.deleted)).toEqual([['doomed'], ['doomed']]);
  });
});

describe('an operator with an identity of its own', () => {
  let running: RunningOperator | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
  });

  test('names its writes (managedFields) and its Events (source.component) after the identity', async () => {
    const { kc, namespace } = await widgetNamespace('identities');
    const identity = Identity.parse('alpha.example.com');
    class Handlers {
      @on.create(API, 'widgets')
      async created({ events }: ChangeContext): Promise<void> {
        events.info('Seen', 'handled by alpha');
      }
    }
    running = await startOperator(kc, namespace, [Handlers], { identity: identity.name });
    await new Widgets(kc, namespace).create('named');
    await waitFor(async () => handledSize(await readWidget(namespace, 'named'), identity) === 1, {
      what: 'the create to be handled',
    });
    const seen = await waitFor(
      async () =>
        (
          await kc
            .makeApiClient(CoreV1Api)
            .listNamespacedEvent({ namespace, fieldSelector: 'reason=Seen' })
        ).items[0],
      { what: 'the Event' },
    );

    const managedFields = (await getWidget(namespace, 'named')).metadata?.managedFields as
      Array<{ manager?: string }> | undefined;
    const managers = (managedFields ?? []).map((entry) => entry.manager);
    expect(managers).toContain(identity.fieldManager);
    expect(seen?.source?.component).toBe('alpha.example.com');
  });
});
