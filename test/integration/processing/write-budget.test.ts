import {
  on,
  TemporaryError,
  type ChangeContext,
  type OperatorOptions,
} from '../../../src/framework/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { startOperator, writesTo, type RunningOperator } from '../../support/operators.js';
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

// The write budget per change, one table: each row is a case (what the handlers do, and which phase of
// the object's life is counted), a storage for the diff-base and progress, and the writes expected.
// Writes are the operator's own requests, counted by its client hook, as `PATCH status` (the status
// subresource) or `PATCH object` (the object itself: annotations, the finalizer). After the writes a
// row expects, the echo of each is given time to arrive, so a write it caused would be counted too.
const ECHO_MS = 1_000;

type Storage = NonNullable<OperatorOptions['storage']>;

const waitOutEcho = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, ECHO_MS));

/** The part of an object's life a case counts the writes of. */
type Scenario =
  | { kind: 'create' }
  | { kind: 'update'; spec: Record<string, unknown> }
  | { kind: 'unmatched' }
  | { kind: 'delete'; counted: 'create' | 'delete' };

interface BudgetCase {
  name: string;
  scenario: Scenario;
  /** Fresh handler classes for one test, and what they must have done by its end. */
  handlers(): { classes: HandlerClass[]; done?(): void };
}

interface Row {
  case: BudgetCase;
  storage: Storage;
  writes: string[];
  /** What the writes are, for the test's name. */
  why: string;
  /** More that a user would check on the stored object. */
  check?(namespace: string): Promise<void>;
}

let running: RunningOperator | undefined;

/** The writes to `name` from the `from`-th on, once there are at least `expected` of them and their echo has passed. */
async function settledWrites(
  operator: RunningOperator,
  name: string,
  expected: number,
  from = 0,
): Promise<string[]> {
  await waitFor(() => writesTo(operator.requests, name).length >= from + expected, {
    what: `${expected} writes to ${name}`,
  });
  await waitOutEcho();
  return writesTo(operator.requests, name).slice(from);
}

/**
 * Runs `scenario` on a fresh namespace with an operator with `storage` running `classes`, and returns the
 * writes it counts, once there are `expected` of them and their echo has passed.
 */
async function counted(
  scenario: Scenario,
  storage: Storage,
  classes: readonly HandlerClass[],
  expected: number,
): Promise<{ writes: string[]; namespace: string }> {
  const kc = sharedKubeConfig();
  await installWidgetCrd(kc);
  const namespace = await uniqueNamespace(
    kc,
    `budget-${scenario.kind}-${storage === 'status' ? 's' : 'a'}`,
  );
  const operator = (running = await startOperator(kc, namespace, classes, { storage }));
  const widgets = new Widgets(kc, namespace);
  switch (scenario.kind) {
    case 'create':
      await widgets.create('w');
      return { writes: await settledWrites(operator, 'w', expected), namespace };
    case 'update': {
      // Creation costs one write (the diff-base) with either storage: no create handler.
      await widgets.create('w', { size: 1 });
      const before = (await settledWrites(operator, 'w', 1)).length;
      await widgets.patchSpec('w', scenario.spec);
      return { writes: await settledWrites(operator, 'w', expected, before), namespace };
    }
    case 'unmatched':
      await widgets.create('unmanaged');
      await widgets.createLabelled('managed', { managed: 'yes' });
      await settledWrites(operator, 'managed', 1);
      return { writes: writesTo(operator.requests, 'unmanaged'), namespace };
    case 'delete': {
      // Creation costs two writes (the finalizer, the diff-base); deletion at least one (the finalizer's removal).
      await widgets.create('w');
      const create = await settledWrites(
        operator,
        'w',
        scenario.counted === 'create' ? expected : 2,
      );
      await widgets.delete('w');
      await waitFor(async () => (await readWidget(namespace, 'w')) === undefined, {
        what: 'w to be gone',
      });
      const deletion = await settledWrites(
        operator,
        'w',
        scenario.counted === 'delete' ? expected : 1,
        create.length,
      );
      return { writes: scenario.counted === 'create' ? create : deletion, namespace };
    }
  }
}

const createWritingStatus: BudgetCase = {
  name: 'a successful create handler that writes status',
  scenario: { kind: 'create' },
  handlers() {
    let runs = 0;
    class Handlers {
      @on.create(API, 'widgets')
      async created({ patch }: ChangeContext): Promise<void> {
        runs += 1;
        patch.status.phase = 'Ready';
      }
    }
    return { classes: [Handlers], done: () => expect(runs).toBe(1) };
  },
};

const createWritingNothing: BudgetCase = {
  name: 'a create handler that writes nothing',
  scenario: { kind: 'create' },
  handlers() {
    class Handlers {
      @on.create(API, 'widgets')
      async created(): Promise<void> {}
    }
    return { classes: [Handlers] };
  },
};

const unmatched: BudgetCase = {
  name: 'an object no handler matches',
  scenario: { kind: 'unmatched' },
  handlers() {
    let runs = 0;
    class Handlers {
      @on.create(API, 'widgets', { labels: { managed: 'yes' } })
      async created(): Promise<void> {
        runs += 1;
      }
    }
    return { classes: [Handlers], done: () => expect(runs).toBe(1) };
  },
};

const createRetriedOnce: BudgetCase = {
  name: 'a create handler failing once with TemporaryError, then writing status',
  scenario: { kind: 'create' },
  handlers() {
    const attempts: number[] = [];
    class Handlers {
      @on.create(API, 'widgets')
      async created({ retry, patch }: ChangeContext): Promise<void> {
        attempts.push(retry);
        if (retry === 0) throw new TemporaryError('not yet', { delay: 0 });
        patch.status.phase = 'Ready';
      }
    }
    return { classes: [Handlers], done: () => expect(attempts).toEqual([0, 1]) };
  },
};

const updateWritingStatus: BudgetCase = {
  name: 'an update handler that writes status',
  scenario: { kind: 'update', spec: { size: 2 } },
  handlers() {
    const sizes: unknown[] = [];
    class Handlers {
      @on.update(API, 'widgets')
      async updated({ spec, patch }: ChangeContext): Promise<void> {
        sizes.push(spec.size);
        patch.status.size = spec.size;
      }
    }
    return { classes: [Handlers], done: () => expect(sizes).toEqual([2]) };
  },
};

const updateWritingNothing: BudgetCase = {
  name: 'an update handler that writes nothing',
  scenario: { kind: 'update', spec: { size: 2 } },
  handlers() {
    let runs = 0;
    class Handlers {
      @on.update(API, 'widgets')
      async updated(): Promise<void> {
        runs += 1;
      }
    }
    return { classes: [Handlers], done: () => expect(runs).toBe(1) };
  },
};

const fieldUnchanged: BudgetCase = {
  name: 'a field handler whose field did not change (it does not run)',
  scenario: { kind: 'update', spec: { color: 'blue' } },
  handlers() {
    let runs = 0;
    class Handlers {
      @on.field(API, 'widgets', 'spec.size')
      async sized(): Promise<void> {
        runs += 1;
      }
    }
    return { classes: [Handlers], done: () => expect(runs).toBe(0) };
  },
};

const deleteHandlerAtCreate: BudgetCase = {
  name: 'a delete handler, at create',
  scenario: { kind: 'delete', counted: 'create' },
  handlers() {
    class Handlers {
      @on.deletion(API, 'widgets')
      async deleted(): Promise<void> {}
    }
    return { classes: [Handlers] };
  },
};

const deleteWritingStatus: BudgetCase = {
  name: 'a delete handler that writes status, at deletion',
  scenario: { kind: 'delete', counted: 'delete' },
  handlers() {
    let runs = 0;
    class Handlers {
      @on.deletion(API, 'widgets')
      async deleted({ patch }: ChangeContext): Promise<void> {
        runs += 1;
        patch.status.phase = 'Deleting';
      }
    }
    return { classes: [Handlers], done: () => expect(runs).toBe(1) };
  },
};

const deleteWritingNothing: BudgetCase = {
  name: 'a delete handler that writes nothing, at deletion',
  scenario: { kind: 'delete', counted: 'delete' },
  handlers() {
    let runs = 0;
    class Handlers {
      @on.deletion(API, 'widgets')
      async deleted(): Promise<void> {
        runs += 1;
      }
    }
    return { classes: [Handlers], done: () => expect(runs).toBe(1) };
  },
};

/** With status storage the bookkeeping rode in the status write: the record is there, and no annotation. */
async function bookkeepingInStatus(namespace: string): Promise<void> {
  const stored = await getWidget(namespace, 'w');
  expect(stored.status).toMatchObject({
    phase: 'Ready',
    'konductor.dev': { 'last-handled-configuration': expect.any(String) },
  });
  expect(Object.keys(stored.metadata?.annotations ?? {})).toEqual([]);
}

// Results delivery: the return value rides in the status write the handler makes anyway.
const createReturningResult: BudgetCase = {
  name: 'a create handler that writes status and returns a result',
  scenario: { kind: 'create' },
  handlers() {
    class Handlers {
      @on.create(API, 'widgets')
      async created({ patch }: ChangeContext): Promise<{ pvc: string; size: number }> {
        patch.status.phase = 'Ready';
        return { pvc: 'w-data', size: 3 };
      }
    }
    return { classes: [Handlers] };
  },
};

/** The result is in the status under the handler's id, beside what the handler wrote itself. */
async function resultInStatus(namespace: string): Promise<void> {
  const stored = await getWidget(namespace, 'w');
  expect(stored.status).toMatchObject({ phase: 'Ready', created: { pvc: 'w-data', size: 3 } });
}

const STATUS = 'PATCH status';
const OBJECT = 'PATCH object';

const table: Row[] = [
  {
    case: createWritingStatus,
    storage: 'annotations',
    writes: [STATUS, OBJECT],
    why: 'status, then the object',
  },
  {
    case: createWritingStatus,
    storage: 'status',
    writes: [STATUS],
    why: 'status, with the diff-base in it',
    check: bookkeepingInStatus,
  },
  {
    case: createWritingNothing,
    storage: 'annotations',
    writes: [OBJECT],
    why: 'the record of having handled it',
  },
  {
    case: createWritingNothing,
    storage: 'status',
    writes: [STATUS],
    why: 'the record of having handled it, in the status',
  },
  { case: unmatched, storage: 'annotations', writes: [], why: 'it is never written to' },
  { case: unmatched, storage: 'status', writes: [], why: 'it is never written to' },
  {
    case: createRetriedOnce,
    storage: 'annotations',
    writes: [OBJECT, STATUS, OBJECT],
    why: 'the progress record, then status and the object',
  },
  {
    case: createRetriedOnce,
    storage: 'status',
    writes: [STATUS, STATUS],
    why: 'the progress record, then status with the diff-base',
  },
  {
    case: updateWritingStatus,
    storage: 'annotations',
    writes: [STATUS, OBJECT],
    why: 'status, then the object',
  },
  {
    case: updateWritingStatus,
    storage: 'status',
    writes: [STATUS],
    why: 'status, with the new diff-base in it',
  },
  {
    case: updateWritingNothing,
    storage: 'annotations',
    writes: [OBJECT],
    why: 'the new diff-base',
  },
  {
    case: updateWritingNothing,
    storage: 'status',
    writes: [STATUS],
    why: 'the new diff-base, in the status',
  },
  { case: fieldUnchanged, storage: 'annotations', writes: [OBJECT], why: 'the new diff-base' },
  {
    case: fieldUnchanged,
    storage: 'status',
    writes: [STATUS],
    why: 'the new diff-base, in the status',
  },
  {
    case: deleteHandlerAtCreate,
    storage: 'annotations',
    writes: [OBJECT, OBJECT],
    why: 'the finalizer, then the diff-base',
  },
  {
    case: deleteHandlerAtCreate,
    storage: 'status',
    writes: [OBJECT, STATUS],
    why: 'the finalizer, then the diff-base in the status',
  },
  {
    case: deleteWritingStatus,
    storage: 'annotations',
    writes: [STATUS, OBJECT],
    why: 'status, then the finalizer’s removal',
  },
  {
    case: deleteWritingStatus,
    storage: 'status',
    writes: [STATUS, OBJECT],
    why: 'status, then the finalizer’s removal',
  },
  {
    case: deleteWritingNothing,
    storage: 'annotations',
    writes: [OBJECT],
    why: 'the finalizer’s removal',
  },
  {
    case: deleteWritingNothing,
    storage: 'status',
    writes: [OBJECT],
    why: 'the finalizer’s removal',
  },
  {
    case: createReturningResult,
    storage: 'annotations',
    writes: [STATUS, OBJECT],
    why: 'status with the result, then the object',
    check: resultInStatus,
  },
  {
    case: createReturningResult,
    storage: 'status',
    writes: [STATUS],
    why: 'status with the result and the diff-base',
    check: resultInStatus,
  },
];

const cost = (writes: readonly string[]): string =>
  writes.length === 0
    ? 'no write'
    : `exactly ${writes.length} write${writes.length === 1 ? '' : 's'}`;

describe('the write budget per change', () => {
  afterEach(async () => {
    await running?.stop();
    running = undefined;
  });

  for (const row of table) {
    test(`${row.case.name}, with ${row.storage} storage, costs ${cost(row.writes)}: ${row.why}`, async () => {
      const handlers = row.case.handlers();

      const { writes, namespace } = await counted(
        row.case.scenario,
        row.storage,
        handlers.classes,
        row.writes.length,
      );

      expect(writes).toEqual(row.writes);
      handlers.done?.();
      await row.check?.(namespace);
    });
  }
});
