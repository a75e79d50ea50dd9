import { emptyPatch } from '../../../src/framework/intents/patch.js';
import { ObjectMemos } from '../../../src/framework/intents/memo.js';
import { deliverResult } from '../../../src/framework/processing/results-delivery.js';
import { widget } from '../../support/widget-objects.js';
import { handler, Harness } from './change-processor-harness.js';

describe('results delivery', () => {
  test('a returned value is set in the patch status under the handler id, as JSON', () => {
    const patch = emptyPatch();
    patch.status.phase = 'Ready';

    expect(
      deliverResult(patch, 'Widgets.created', {
        pvc: 'data',
        at: new Date('2024-05-01T12:00:00Z'),
        skipped: undefined,
      }),
    ).toBeUndefined();

    expect(patch.status).toEqual({
      phase: 'Ready',
      'Widgets.created': { pvc: 'data', at: '2024-05-01T12:00:00.000Z' },
    });
  });

  test('undefined and null store nothing', () => {
    const patch = emptyPatch();
    deliverResult(patch, 'a', undefined);
    deliverResult(patch, 'b', null);

    expect(patch.status).toEqual({});
  });

  test('a value that is not JSON is refused with what to do', () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;

    expect(deliverResult(emptyPatch(), 'h', () => 1)).toMatch(
      /handler h returned a function, which is not JSON; return JSON data, or nothing/,
    );
    expect(deliverResult(emptyPatch(), 'h', 10n)).toMatch(/not JSON/);
    expect(deliverResult(emptyPatch(), 'h', cycle)).toMatch(/not JSON/);
  });

  test("a create handler's result is written in its own status write, with the status it set", async () => {
    const created = handler('create', 'Widgets.created', {}, ({ patch }) => {
      patch.status.phase = 'Ready';
      return { pvc: 'w1-data' };
    });
    const h = new Harness([created], widget());

    await h.deliver();

    const statusWrites = h.api.writes.filter(
      (write) => 'subresource' in write && write.subresource === 'status',
    );
    expect(statusWrites).toHaveLength(1);
    expect(h.api.object.status).toEqual({ phase: 'Ready', 'Widgets.created': { pvc: 'w1-data' } });
  });

  test('a handler returning a function fails permanently, naming it', async () => {
    const created = handler('create', 'Widgets.created', {}, () => () => 'oops');
    const h = new Harness([created], widget());

    await h.deliver();

    expect(h.poster.posted.map((event) => event.reason)).toContain('HandlerFailed');
    expect(
      (h.api.object.status as Record<string, unknown> | undefined)?.['Widgets.created'],
    ).toBeUndefined();
  });

  test('change handlers of one object share its memo across runs', async () => {
    const memos = new ObjectMemos();
    const created = handler('create', 'Widgets.created', {}, ({ memo }) => {
      memo.runs = 1;
    });
    const h = new Harness([created], widget(), undefined, { memos });

    await h.deliver();

    expect(memos.of(widget().metadata!.uid!).runs).toBe(1);
  });
});
