import { on, TemporaryError, type ChangeContext, type HandlerClass } from '../../../src/framework/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { startOperator, writesTo, type RunningOperator } from '../../support/operators.js';
import { getWidget, installWidgetCrd, readWidget, Widgets, WIDGET_API_VERSION } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';

const API = WIDGET_API_VERSION;

// The write budget with status storage, one row per spec, counted as write-budget.test.ts counts the
// annotation storage: the operator's own requests, as `PATCH status` (the status subresource, where
// the diff-base and progress now live) or `PATCH object` (the object itself: the finalizer, or what
// handlers write outside status). After the writes a case expects, the echo of each is given time to
// arrive, so a write it caused would be counted too.
const ECHO_MS = 1_000;

const waitOutEcho = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, ECHO_MS));

/** A fresh namespace with the Widget CRD and an operator with status storage running `handlers` on it. */
async function operatorFor(prefix: string, handlers: readonly HandlerClass[]): Promise<{ running: RunningOperator; widgets: Widgets; namespace: string }> {
  const kc = sharedKubeConfig();
  await installWidgetCrd(kc);
  const namespace = await uniqueNamespace(kc, prefix);
  const running = await startOperator(kc, namespace, handlers, { storage: 'status' });
  return { running, widgets: new Widgets(kc, namespace), namespace };
}

/** The writes to `name` from the `from`-th on, once there are at least `expected` of them and their echo has passed. */
async function settledWrites(running: RunningOperator, name: string, expected: number, from = 0): Promise<string[]> {
  await waitFor(() => writesTo(running.requests, name).length >= from + expected, { what: `${expected} writes to ${name}` });
  await waitOutEcho();
  return writesTo(running.requests, name).slice(from);
}

describe('the write budget with status storage', () => {
  let running: RunningOperator | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
  });

  describe('create', () => {
    test('a successful create handler that writes status costs exactly 1 write: status, with the diff-base in it', async () => {
      let runs = 0;
      class Handlers {
        @on.create(API, 'widgets')
        async created({ patch }: ChangeContext): Promise<void> {
          runs += 1;
          patch.status.phase = 'Ready';
        }
      }
      const started = await operatorFor('sbudget1', [Handlers]);
      running = started.running;
      await started.widgets.create('w');

      expect(await settledWrites(running, 'w', 1)).toEqual(['PATCH status']);
      expect(runs).toBe(1);
      const stored = await getWidget(started.namespace, 'w');
      expect(stored.status).toMatchObject({ phase: 'Ready', 'konductor.dev': { 'last-handled-configuration': expect.any(String) } });
      expect(Object.keys(stored.metadata?.annotations ?? {})).toEqual([]);
    });

    test('a create handler that writes nothing costs exactly 1 write (the record of having handled it, in the status)', async () => {
      class Handlers {
        @on.create(API, 'widgets')
        async created(): Promise<void> {}
      }
      const started = await operatorFor('sbudget0', [Handlers]);
      running = started.running;
      await started.widgets.create('w');

      expect(await settledWrites(running, 'w', 1)).toEqual(['PATCH status']);
    });

    test('a create handler failing once with TemporaryError costs 2 writes: the progress record, then status with the diff-base', async () => {
      const attempts: number[] = [];
      class Handlers {
        @on.create(API, 'widgets')
        async created({ retry, patch }: ChangeContext): Promise<void> {
          attempts.push(retry);
          if (retry === 0) throw new TemporaryError('not yet', { delay: 0 });
          patch.status.phase = 'Ready';
        }
      }
      const started = await operatorFor('sbudget-retry', [Handlers]);
      running = started.running;
      await started.widgets.create('w');

      expect(await settledWrites(running, 'w', 2)).toEqual(['PATCH status', 'PATCH status']);
      expect(attempts).toEqual([0, 1]);
    });
  });

  describe('update', () => {
    /** Starts `handlers`, creates `w` and lets its creation (`createWrites` writes) settle; returns the write count so far. */
    async function created(prefix: string, handlers: readonly HandlerClass[], createWrites: number): Promise<{ widgets: Widgets; before: number }> {
      const started = await operatorFor(prefix, handlers);
      running = started.running;
      await started.widgets.create('w', { size: 1 });
      const before = (await settledWrites(running, 'w', createWrites)).length;
      return { widgets: started.widgets, before };
    }

    test('an update handler that writes status costs exactly 1 write', async () => {
      const sizes: unknown[] = [];
      class Handlers {
        @on.update(API, 'widgets')
        async updated({ spec, patch }: ChangeContext): Promise<void> {
          sizes.push(spec.size);
          patch.status.size = spec.size;
        }
      }
      const { widgets, before } = await created('sbudget-update1', [Handlers], 1);
      await widgets.patchSpec('w', { size: 2 });

      expect(await settledWrites(running!, 'w', 1, before)).toEqual(['PATCH status']);
      expect(sizes).toEqual([2]);
    });

    test('an update handler that writes nothing costs exactly 1 write (the new diff-base, in the status)', async () => {
      let runs = 0;
      class Handlers {
        @on.update(API, 'widgets')
        async updated(): Promise<void> {
          runs += 1;
        }
      }
      const { widgets, before } = await created('sbudget-update0', [Handlers], 1);
      await widgets.patchSpec('w', { size: 2 });

      expect(await settledWrites(running!, 'w', 1, before)).toEqual(['PATCH status']);
      expect(runs).toBe(1);
    });

    test('a field handler whose field did not change does not run, and the new diff-base costs 1 write', async () => {
      let runs = 0;
      class Handlers {
        @on.field(API, 'widgets', 'spec.size')
        async sized(): Promise<void> {
          runs += 1;
        }
      }
      const { widgets, before } = await created('sbudget-field', [Handlers], 1);
      await widgets.patchSpec('w', { color: 'blue' });

      expect(await settledWrites(running!, 'w', 1, before)).toEqual(['PATCH status']);
      expect(runs).toBe(0);
    });
  });

  describe('delete', () => {
    /** Starts `handlers` (a delete handler among them), creates `w`, lets its creation settle, deletes it; returns the writes of the deletion. */
    async function deletion(prefix: string, handlers: readonly HandlerClass[], deleteWrites: number): Promise<{ create: string[]; delete: string[] }> {
      const started = await operatorFor(prefix, handlers);
      running = started.running;
      await started.widgets.create('w');
      const create = await settledWrites(running, 'w', 2);
      await started.widgets.delete('w');
      await waitFor(async () => (await readWidget(started.namespace, 'w')) === undefined, { what: 'w to be gone' });
      return { create, delete: await settledWrites(running, 'w', deleteWrites, create.length) };
    }

    test('a delete handler costs 2 writes at create: the finalizer, then the diff-base in the status', async () => {
      class Handlers {
        @on.delete(API, 'widgets')
        async deleted(): Promise<void> {}
      }
      expect((await deletion('sbudget-delete-create', [Handlers], 1)).create).toEqual(['PATCH object', 'PATCH status']);
    });

    test('a delete handler that writes status costs exactly 2 writes at deletion: status, then the finalizer’s removal', async () => {
      let runs = 0;
      class Handlers {
        @on.delete(API, 'widgets')
        async deleted({ patch }: ChangeContext): Promise<void> {
          runs += 1;
          patch.status.phase = 'Deleting';
        }
      }
      expect((await deletion('sbudget-delete2', [Handlers], 2)).delete).toEqual(['PATCH status', 'PATCH object']);
      expect(runs).toBe(1);
    });

    test('a delete handler that writes nothing costs exactly 1 write at deletion: the finalizer’s removal', async () => {
      let runs = 0;
      class Handlers {
        @on.delete(API, 'widgets')
        async deleted(): Promise<void> {
          runs += 1;
        }
      }
      expect((await deletion('sbudget-delete0', [Handlers], 1)).delete).toEqual(['PATCH object']);
      expect(runs).toBe(1);
    });
  });
});
