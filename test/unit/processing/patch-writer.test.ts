import type { Resource } from '../../../src/framework/api/resource.js';
import { writePatch } from '../../../src/framework/processing/patch-writer.js';
import { widget, widgetResource } from '../../support/widget-objects.js';
import { FakeObjectApi } from './fake-object-api.js';

const NO_STATUS_SUBRESOURCE: Resource = { ...widgetResource, hasStatus: false };

describe('writePatch', () => {
  test('without a status subresource, status goes into the one merge PATCH on the object', async () => {
    const api = new FakeObjectApi(widget(), NO_STATUS_SUBRESOURCE);

    await writePatch(api.asObjectApi(), 'default', 'w1', {
      spec: { size: 2 },
      status: { phase: 'Ready' },
    });

    expect(api.writes).toEqual([
      {
        method: 'mergePatch',
        namespace: 'default',
        name: 'w1',
        body: { spec: { size: 2 }, status: { phase: 'Ready' } },
      },
    ]);
    expect(api.object).toMatchObject({ spec: { size: 2 }, status: { phase: 'Ready' } });
  });

  test('with a status subresource, status is one PATCH on it, sent before the PATCH on the object', async () => {
    const api = new FakeObjectApi(widget(), widgetResource);

    await writePatch(api.asObjectApi(), 'default', 'w1', {
      spec: { size: 2 },
      status: { phase: 'Ready' },
    });

    expect(api.writes).toEqual([
      {
        method: 'mergePatch',
        namespace: 'default',
        name: 'w1',
        body: { status: { phase: 'Ready' } },
        subresource: 'status',
      },
      { method: 'mergePatch', namespace: 'default', name: 'w1', body: { spec: { size: 2 } } },
    ]);
  });

  test('a status-only patch without a status subresource is still a single write', async () => {
    const api = new FakeObjectApi(widget(), NO_STATUS_SUBRESOURCE);

    await writePatch(api.asObjectApi(), 'default', 'w1', { status: { phase: 'Ready' } });

    expect(api.writes).toEqual([
      {
        method: 'mergePatch',
        namespace: 'default',
        name: 'w1',
        body: { status: { phase: 'Ready' } },
      },
    ]);
  });
});
