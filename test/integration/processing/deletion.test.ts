import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type CoreV1Event,
  type KubeConfig,
} from '@kubernetes/client-node';
import {
  on,
  PermanentError,
  TemporaryError,
  type ChangeContext,
} from '../../../src/framework/index.js';
import { DIFF_BASE_KEY, FINALIZER, progressKey } from '../../../src/framework/state/keys.js';
import type { JsonPatchOp } from '../../../src/framework/api/object-api.js';
import type { ProgressRecord } from '../../../src/framework/state/progress.js';
import { sharedKubeConfig, statusOf } from '../../support/cluster.js';
import { startOperator, type RunningOperator } from '../../support/operators.js';
import {
  Widgets,
  type Widget,
  readWidget,
  getWidget,
  WIDGET_API_VERSION,
  widgetIds,
} from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { widgetNamespace } from '../../support/widget-namespace.js';

const API = WIDGET_API_VERSION;
const OTHER = 'example.com/other';

function objects(kc: KubeConfig): CustomObjectsApi {
  return kc.makeApiClient(CustomObjectsApi);
}

async function isGone(namespace: string, name: string): Promise<boolean> {
  return (await readWidget(namespace, name)) === undefined;
}

function finalizersOf(widget: Widget | undefined): string[] {
  return widget?.metadata?.finalizers ?? [];
}

async function isHandled(namespace: string, name: string): Promise<boolean> {
  return (await getWidget(namespace, name)).metadata?.annotations?.[DIFF_BASE_KEY] !== undefined;
}

/** core/v1 Events about one object, as `kubectl describe` would show them. */
async function eventsAbout(namespace: string, name: string): Promise<CoreV1Event[]> {
  const list = await sharedKubeConfig()
    .makeApiClient(CoreV1Api)
    .listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` });
  return list.items;
}

const settle = (ms = 500): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function countsOf(names: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const name of names) counts.set(name, (counts.get(name) ?? 0) + 1);
  return counts;
}

/**
 * A second controller that owns the finalizer `example.com/other`: it adds or removes it with
 * test-guarded JSON patches (re-reading and retrying when the `test` fails with 422), never touching
 * other entries. Retries while the object does not exist yet (404).
 */
class OtherController {
  private readonly api: CustomObjectsApi;

  constructor(
    kc: KubeConfig,
    private readonly namespace: string,
  ) {
    this.api = objects(kc);
  }

  async set(name: string, present: boolean): Promise<void> {
    for (let attempt = 0; attempt < 200; attempt++) {
      let widget: Widget;
      try {
        widget = (await this.api.getNamespacedCustomObject({
          ...widgetIds,
          namespace: this.namespace,
          name,
        })) as Widget;
      } catch (error) {
        if (statusOf(error) !== 404) throw error;
        await settle(2); // start right after the create, racing the operator's own finalizer write
        continue;
      }
      const ops = present ? this.addOps(widget) : this.removeOps(widget);
      if (ops.length === 0) return;
      try {
        await this.api.patchNamespacedCustomObject(
          { ...widgetIds, namespace: this.namespace, name, body: ops },
          setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
        );
        return;
      } catch (error) {
        if (statusOf(error) !== 422 && statusOf(error) !== 409) throw error;
      }
    }
    throw new Error(
      `the other controller could not ${present ? 'add' : 'remove'} its finalizer on ${name}`,
    );
  }

  private addOps(widget: Widget): JsonPatchOp[] {
    const current = widget.metadata?.finalizers;
    if (current?.includes(OTHER)) return [];
    if (current) {
      return [
        { op: 'test', path: '/metadata/finalizers', value: current },
        { op: 'add', path: '/metadata/finalizers/-', value: OTHER },
      ];
    }
    return [
      { op: 'test', path: '/metadata/resourceVersion', value: widget.metadata?.resourceVersion },
      { op: 'add', path: '/metadata/finalizers', value: [OTHER] },
    ];
  }

  private removeOps(widget: Widget): JsonPatchOp[] {
    const index = finalizersOf(widget).indexOf(OTHER);
    if (index < 0) return [];
    return [
      { op: 'test', path: `/metadata/finalizers/${index}`, value: OTHER },
      { op: 'remove', path: `/metadata/finalizers/${index}` },
    ];
  }
}

describe('deletion and finalizers', () => {
  let running: RunningOperator | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
  });

  test('a non-optional delete handler adds the finalizer, runs exactly once on delete, and the object then disappears', async () => {
    const { kc, namespace } = await widgetNamespace('delete');
    const deleted: string[] = [];
    class Handlers {
      @on.deletion(API, 'widgets')
      async deleted({ name }: ChangeContext): Promise<void> {
        deleted.push(name);
      }
    }
    running = await startOperator(kc, namespace, [Handlers]);
    const widgets = new Widgets(kc, namespace);
    await widgets.create('doomed');
    await waitFor(
      async () => finalizersOf(await getWidget(namespace, 'doomed')).includes(FINALIZER),
      { what: 'the finalizer to be added' },
    );
    expect(finalizersOf(await getWidget(namespace, 'doomed'))).toEqual([FINALIZER]);
    expect(deleted).toEqual([]);

    await widgets.delete('doomed');
    await waitFor(() => isGone(namespace, 'doomed'), { what: 'the object to disappear (404)' });
    await settle(); // room for a duplicate run to show up

    expect(deleted).toEqual(['doomed']);
  });

  test('the finalizer is never added when only create and update handlers exist', async () => {
    const { kc, namespace } = await widgetNamespace('no-finalizer');
    const created: string[] = [];
    class Handlers {
      @on.create(API, 'widgets')
      async created({ name }: ChangeContext): Promise<void> {
        created.push(name);
      }

      @on.update(API, 'widgets')
      async updated(): Promise<void> {}
    }
    running = await startOperator(kc, namespace, [Handlers]);
    const widgets = new Widgets(kc, namespace);
    await widgets.create('plain');
    await waitFor(() => isHandled(namespace, 'plain'), { what: 'the create to be recorded' });
    await widgets.patchSpec('plain', { size: 2 });
    await waitFor(
      async () => {
        const widget = await getWidget(namespace, 'plain');
        return widget.metadata?.annotations?.[DIFF_BASE_KEY]?.includes('"size":2') ?? false;
      },
      { what: 'the update to be recorded' },
    );
    await settle();

    expect(created).toEqual(['plain']);
    expect(finalizersOf(await getWidget(namespace, 'plain'))).toEqual([]);
  });

  test('an optional delete handler adds no finalizer, yet runs once (best effort) when the object is deleted', async () => {
    const { kc, namespace } = await widgetNamespace('optional');
    const deleted: string[] = [];
    class Handlers {
      @on.deletion(API, 'widgets', { optional: true })
      async deleted({ name }: ChangeContext): Promise<void> {
        deleted.push(name);
      }
    }
    running = await startOperator(kc, namespace, [Handlers]);
    const widgets = new Widgets(kc, namespace);
    await widgets.create('light');
    await waitFor(() => isHandled(namespace, 'light'), { what: 'the object to be handled' });
    expect(finalizersOf(await getWidget(namespace, 'light'))).toEqual([]);

    await widgets.delete('light');
    await waitFor(() => deleted.length > 0, { what: 'the optional delete handler to run' });
    await settle();

    expect(deleted).toEqual(['light']);
    expect(await isGone(namespace, 'light')).toBe(true);
  });

  test('a delete handler failing once with TemporaryError holds the object until it succeeds', async () => {
    const { kc, namespace } = await widgetNamespace('delete-retry');
    const attempts: number[] = [];
    class Handlers {
      @on.deletion(API, 'widgets')
      async deleted({ retry }: ChangeContext): Promise<void> {
        attempts.push(retry);
        if (retry === 0) throw new TemporaryError('cleanup not finished', { delay: 1 });
      }
    }
    running = await startOperator(kc, namespace, [Handlers]);
    const widgets = new Widgets(kc, namespace);
    await widgets.create('sticky');
    await waitFor(
      async () => finalizersOf(await getWidget(namespace, 'sticky')).includes(FINALIZER),
      { what: 'the finalizer to be added' },
    );

    await widgets.delete('sticky');
    // While the retry is pending (1 s), the object is held: marked for deletion, our finalizer still on it.
    let pending: Widget | undefined;
    await waitFor(
      async () => {
        if (attempts.length !== 1) return false;
        const widget = await readWidget(namespace, 'sticky');
        if (widget?.metadata?.annotations?.[progressKey('deleted')] === undefined) return false;
        pending = widget;
        return true;
      },
      { what: 'the first attempt to fail and be recorded' },
    );
    expect(attempts).toEqual([0]);
    expect(pending?.metadata?.deletionTimestamp).toBeDefined();
    expect(finalizersOf(pending)).toEqual([FINALIZER]);

    await waitFor(() => isGone(namespace, 'sticky'), {
      what: 'the object to disappear after the retry',
    });
    await settle();

    expect(attempts).toEqual([0, 1]);
  });

  test('a delete handler failing permanently keeps the object and says why; the operator restarted with a fix lets it go', async () => {
    const { kc, namespace } = await widgetNamespace('delete-fails');
    let fixed = false;
    const attempts: string[] = [];
    class Handlers {
      @on.deletion(API, 'widgets')
      async deleted({ name }: ChangeContext): Promise<void> {
        attempts.push(fixed ? 'fixed' : 'broken');
        if (!fixed) throw new PermanentError(`cannot release the bucket of ${name}`);
      }
    }
    running = await startOperator(kc, namespace, [Handlers]);
    const widgets = new Widgets(kc, namespace);
    await widgets.create('stuck');
    await waitFor(
      async () => finalizersOf(await getWidget(namespace, 'stuck')).includes(FINALIZER),
      { what: 'the finalizer to be added' },
    );

    await widgets.delete('stuck');
    let record: ProgressRecord | undefined;
    await waitFor(
      async () => {
        const raw = (await readWidget(namespace, 'stuck'))?.metadata?.annotations?.[
          progressKey('deleted')
        ];
        record = raw === undefined ? undefined : (JSON.parse(raw) as ProgressRecord);
        return record?.failure === true;
      },
      { what: 'the permanent failure to be recorded' },
    );
    let warning: CoreV1Event | undefined;
    await waitFor(
      async () => {
        warning = (await eventsAbout(namespace, 'stuck')).find((e) => e.reason === 'HandlerFailed');
        return warning !== undefined;
      },
      { what: 'the HandlerFailed Event' },
    );
    await settle(1_000);

    const stays = new RegExp(
      `${namespace}/stuck keeps the finalizer konductor\\.dev/finalizer and stays until .*removed by hand`,
    );
    expect(record?.message).toMatch(stays);
    expect(warning).toMatchObject({ type: 'Warning', message: expect.stringMatching(stays) });
    const held = await getWidget(namespace, 'stuck');
    expect(held.metadata?.deletionTimestamp).toBeDefined();
    expect(finalizersOf(held)).toEqual([FINALIZER]);
    expect(attempts).toEqual(['broken']);

    await running.stop();
    fixed = true;
    running = await startOperator(kc, namespace, [Handlers]);
    await waitFor(() => isGone(namespace, 'stuck'), {
      what: 'the object to disappear once the fixed handler succeeded',
    });

    expect(attempts).toEqual(['broken', 'fixed']);
  });

  test("a second controller's concurrent finalizer changes are neither lost nor duplicated, and ours stays exactly once", async () => {
    const { kc, namespace } = await widgetNamespace('other-finalizer');
    const deleted: string[] = [];
    class Handlers {
      @on.deletion(API, 'widgets')
      async deleted({ name }: ChangeContext): Promise<void> {
        deleted.push(name);
      }
    }
    running = await startOperator(kc, namespace, [Handlers]);
    const widgets = new Widgets(kc, namespace);
    const other = new OtherController(kc, namespace);
    const names = Array.from({ length: 10 }, (_, i) => `shared-${i}`);
    const ROUNDS = 20;
    /** What the other controller last left on each object: odd-numbered objects end with its finalizer. */
    const lastLeft = new Map<string, boolean>();

    await Promise.all(
      names.map(async (name, i) => {
        const churn = (async (): Promise<void> => {
          for (let round = 0; round < ROUNDS; round++) {
            await other.set(name, true);
            await other.set(name, false);
          }
          const keep = i % 2 === 1;
          if (keep) await other.set(name, true);
          lastLeft.set(name, keep);
        })();
        await widgets.create(name);
        await churn;
      }),
    );

    await waitFor(
      async () => {
        const all = await Promise.all(names.map((name) => getWidget(namespace, name)));
        return all.every(
          (w) =>
            finalizersOf(w).includes(FINALIZER) &&
            w.metadata?.annotations?.[DIFF_BASE_KEY] !== undefined,
        );
      },
      { what: 'every object to be handled and carry our finalizer' },
    );
    await settle();

    for (const name of names) {
      const finalizers = finalizersOf(await getWidget(namespace, name));
      expect({ name, ours: finalizers.filter((f) => f === FINALIZER).length }).toEqual({
        name,
        ours: 1,
      });
      expect({ name, other: finalizers.filter((f) => f === OTHER).length }).toEqual({
        name,
        other: lastLeft.get(name) ? 1 : 0,
      });
    }
    expect(deleted).toEqual([]);

    await Promise.all(names.map((name) => other.set(name, false)));
    await Promise.all(names.map((name) => widgets.delete(name)));
    await waitFor(
      async () => (await Promise.all(names.map((name) => isGone(namespace, name)))).every(Boolean),
      { what: 'every object to disappear' },
    );
    await settle();

    expect(countsOf(deleted)).toEqual(new Map(names.map((name) => [name, 1])));
  });
});
