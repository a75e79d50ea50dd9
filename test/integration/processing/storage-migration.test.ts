import { on, type ChangeContext } from '../../../src/framework/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { startOperator, type RunningOperator } from '../../support/operators.js';
import { installWidgetCrd, Widgets, WIDGET_API_VERSION } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { type HandlerClass } from '../../../src/framework/registry/registry.js';

const API = WIDGET_API_VERSION;
const OBJECTS = 100;
const CHANGED = 10;

type Storage = 'annotations' | 'status';

/** Handler runs of one operator run, by kind. */
interface Runs {
  create: number;
  update: number;
  resume: number;
}

/** Handlers counting their runs into `runs`; the resume handler shows that every object was looked at after a restart. */
function countingHandlers(runs: Runs): HandlerClass {
  class Handlers {
    @on.create(API, 'widgets')
    async created(): Promise<void> {
      runs.create += 1;
    }

    @on.update(API, 'widgets')
    async updated({ patch, spec }: ChangeContext): Promise<void> {
      runs.update += 1;
      patch.status.size = spec.size;
    }

    @on.resume(API, 'widgets')
    async resumed(): Promise<void> {
      runs.resume += 1;
    }
  }
  return Handlers;
}

/** Writes (PATCH) of one operator run to the widgets. */
function patches(running: RunningOperator): number {
  return running.requests.filter((r) => r.method === 'PATCH' && r.path.includes('/widgets/'))
    .length;
}

describe('switching storage with handled objects re-runs no handler', () => {
  let running: RunningOperator | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
  });

  /** Runs an operator with `storage` on `namespace`; returns its counters once it looked at every object (its resume handler ran for each). */
  async function restartWith(namespace: string, storage: Storage): Promise<Runs> {
    await running?.stop();
    const runs: Runs = { create: 0, update: 0, resume: 0 };
    running = await startOperator(sharedKubeConfig(), namespace, [countingHandlers(runs)], {
      storage,
    });
    await waitFor(() => runs.resume + runs.create + runs.update >= OBJECTS, {
      what: `every widget to be looked at with ${storage} storage`,
    });
    return runs;
  }

  test.each([
    ['annotations', 'status'],
    ['status', 'annotations'],
  ] as const)(
    '%s → %s → back: 0 re-runs, no write for the switch, and a change made in between is not handled again',
    async (first, second) => {
      const kc = sharedKubeConfig();
      await installWidgetCrd(kc);
      const namespace = await uniqueNamespace(kc, `migrate-${first.slice(0, 4)}`);
      const widgets = new Widgets(kc, namespace);

      // Handled under the first storage.
      const initial: Runs = { create: 0, update: 0, resume: 0 };
      running = await startOperator(kc, namespace, [countingHandlers(initial)], { storage: first });
      await widgets.createMany('w', OBJECTS);
      await waitFor(() => initial.create === OBJECTS && patches(running!) >= OBJECTS, {
        what: `${OBJECTS} widgets handled with ${first} storage`,
      });

      // Switched: nothing re-runs, nothing is written for the switch; a change is handled once, in the new place.
      const switched = await restartWith(namespace, second);
      expect(switched).toEqual({ create: 0, update: 0, resume: OBJECTS });
      expect(patches(running!)).toBe(0);
      for (let i = 0; i < CHANGED; i++) await widgets.patchSpec(`w-${i}`, { size: 1_000 + i });
      await waitFor(() => switched.update === CHANGED && patches(running!) >= CHANGED, {
        what: `${CHANGED} changes handled with ${second} storage`,
      });

      // And back: neither the objects handled under the first storage nor those changed under the second run again.
      const back = await restartWith(namespace, first);
      expect(back).toEqual({ create: 0, update: 0, resume: OBJECTS });
    },
  );
});
