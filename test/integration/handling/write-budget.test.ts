import { on, type ChangeContext } from '../../../src/framework/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { startOperator, writesTo, type RunningOperator } from '../../support/operators.js';
import { installWidgetCrd, Widgets, WIDGET_API_VERSION } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';

const API = WIDGET_API_VERSION;

// Requests are counted by the operator's own client hook; the echo of each write is given time to
// arrive so a write caused by it would be counted too.
describe('the write budget of a create', () => {
  let running: RunningOperator | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
  });

  test('a successful create handler that writes status costs exactly 2 writes: status, then the object', async () => {
    const kc = sharedKubeConfig();
    await installWidgetCrd(kc);
    const namespace = await uniqueNamespace(kc, 'budget2');
    let runs = 0;
    class Handlers {
      @on.create(API, 'widgets')
      async created({ patch }: ChangeContext): Promise<void> {
        runs += 1;
        patch.status.phase = 'Ready';
      }
    }
    running = await startOperator(kc, namespace, [Handlers]);
    await new Widgets(kc, namespace).create('w');
    await waitFor(() => writesTo(running!.requests, 'w').length >= 2, { what: 'the writes' });
    await new Promise((resolve) => setTimeout(resolve, 1_000));

    expect(runs).toBe(1);
    expect(writesTo(running.requests, 'w')).toEqual(['PATCH status', 'PATCH object']);
  });

  test('a create handler that writes nothing costs exactly 1 write (the record of having handled it)', async () => {
    const kc = sharedKubeConfig();
    await installWidgetCrd(kc);
    const namespace = await uniqueNamespace(kc, 'budget1');
    class Handlers {
      @on.create(API, 'widgets')
      async created(): Promise<void> {}
    }
    running = await startOperator(kc, namespace, [Handlers]);
    await new Widgets(kc, namespace).create('w');
    await waitFor(() => writesTo(running!.requests, 'w').length >= 1, { what: 'the write' });
    await new Promise((resolve) => setTimeout(resolve, 1_000));

    expect(writesTo(running.requests, 'w')).toEqual(['PATCH object']);
  });

  test('an object no handler matches is never written to', async () => {
    const kc = sharedKubeConfig();
    await installWidgetCrd(kc);
    const namespace = await uniqueNamespace(kc, 'stealth');
    let runs = 0;
    class Handlers {
      @on.create(API, 'widgets', { labels: { managed: 'yes' } })
      async created(): Promise<void> {
        runs += 1;
      }
    }
    running = await startOperator(kc, namespace, [Handlers]);
    await new Widgets(kc, namespace).create('unmanaged');
    await new Widgets(kc, namespace).createLabelled('managed', { managed: 'yes' });
    await waitFor(() => runs === 1, { what: 'the managed object to be handled' });
    await new Promise((resolve) => setTimeout(resolve, 1_000));

    expect(writesTo(running.requests, 'unmanaged')).toEqual([]);
  });
});
