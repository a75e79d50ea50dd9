/**
 * Two operators on the same objects with status storage (or one with each storage): each keeps its
 * bookkeeping in its own status field, runs its handlers once per change, and deletion waits for both.
 */
import { on, type ChangeContext } from '../../../src/framework/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { startOperator, type RunningOperator } from '../../support/operators.js';
import {
  getWidget,
  installWidgetCrd,
  readWidget,
  Widgets,
  WIDGET_API_VERSION,
} from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { type HandlerClass } from '../../../src/framework/registry/registry.js';

const API = WIDGET_API_VERSION;
const NAMES = ['a', 'b', 'c'];

/** What one operator's handlers saw: `create:<name>`, `update:<name>:<size>`, `delete:<name>`. */
function handlersFor(seen: string[]): HandlerClass {
  class Handlers {
    @on.create(API, 'widgets')
    async created({ name, patch }: ChangeContext): Promise<void> {
      seen.push(`create:${name}`);
      patch.status.phase = 'Ready';
    }

    @on.update(API, 'widgets')
    async updated({ name, spec }: ChangeContext<{ size?: number }>): Promise<void> {
      seen.push(`update:${name}:${spec.size}`);
    }

    @on.deletion(API, 'widgets')
    async deleted({ name }: ChangeContext): Promise<void> {
      seen.push(`delete:${name}`);
    }
  }
  return Handlers;
}

const settle = (ms = 1_000): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe.each([
  ['both with status storage', 'status', 'status'],
  ['one with each storage', 'annotations', 'status'],
] as const)(
  'two operators with their own identities on the same objects: %s',
  (_, firstStorage, secondStorage) => {
    const running: RunningOperator[] = [];
    afterEach(async () => {
      await Promise.all(running.splice(0).map((operator) => operator.stop()));
    });

    test('each runs its handlers once per change, keeps its own bookkeeping, and deletion waits for both', async () => {
      const kc = sharedKubeConfig();
      await installWidgetCrd(kc);
      const namespace = await uniqueNamespace(
        kc,
        `ids-${firstStorage.slice(0, 4)}-${secondStorage.slice(0, 4)}`,
      );
      const widgets = new Widgets(kc, namespace);
      const alpha: string[] = [];
      const beta: string[] = [];
      running.push(
        await startOperator(kc, namespace, [handlersFor(alpha)], {
          identity: 'alpha.example.com',
          storage: firstStorage,
        }),
      );
      running.push(
        await startOperator(kc, namespace, [handlersFor(beta)], {
          identity: 'beta.example.com',
          storage: secondStorage,
        }),
      );

      for (const name of NAMES) await widgets.create(name, { size: 1 });
      const handledAt = async (name: string, size: number): Promise<boolean> => {
        const widget = await getWidget(namespace, name);
        const status = (widget.status ?? {}) as Record<string, Record<string, string> | undefined>;
        const base = (identity: string, storage: string): string | undefined =>
          storage === 'status'
            ? status[identity]?.['last-handled-configuration']
            : widget.metadata?.annotations?.[`${identity}/last-handled-configuration`];
        return [
          base('alpha.example.com', firstStorage),
          base('beta.example.com', secondStorage),
        ].every(
          (raw) =>
            raw !== undefined &&
            (JSON.parse(raw) as { spec?: { size?: number } }).spec?.size === size,
        );
      };
      for (const name of NAMES)
        await waitFor(() => handledAt(name, 1), { what: `${name} handled by both` });
      for (const name of NAMES) await widgets.patchSpec(name, { size: 2 });
      for (const name of NAMES)
        await waitFor(() => handledAt(name, 2), { what: `${name}'s change handled by both` });
      await settle();

      const expected = NAMES.flatMap((name) => [`create:${name}`, `update:${name}:2`]).sort();
      expect([...alpha].sort()).toEqual(expected);
      expect([...beta].sort()).toEqual(expected);
      const finalizers = (await getWidget(namespace, 'a')).metadata?.finalizers ?? [];
      expect([...finalizers].sort()).toEqual([
        'alpha.example.com/finalizer',
        'beta.example.com/finalizer',
      ]);

      for (const name of NAMES) await widgets.delete(name);
      for (const name of NAMES)
        await waitFor(async () => (await readWidget(namespace, name)) === undefined, {
          what: `${name} to be gone`,
        });
      for (const seen of [alpha, beta])
        expect(seen.filter((entry) => entry.startsWith('delete:')).sort()).toEqual(
          NAMES.map((name) => `delete:${name}`),
        );
    });
  },
);
