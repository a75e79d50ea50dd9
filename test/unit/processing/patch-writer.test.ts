import type { Resource } from '../../../src/framework/api/resource.js';
import {
  MAX_REBASES,
  writePatch,
  WriteSuperseded,
} from '../../../src/framework/processing/patch-writer.js';
import { widget, widgetResource } from '../../support/widget-objects.js';
import { FakeObjectApi } from './fake-object-api.js';

const NO_STATUS_SUBRESOURCE: Resource = { ...widgetResource, hasStatus: false };

describe('writePatch', () => {
  test('without a status subresource, status goes into the one merge PATCH on the object', async () => {
    const api = new FakeObjectApi(widget(), NO_STATUS_SUBRESOURCE);

    await writePatch(api.asObjectApi(), api.object, {
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

    await writePatch(api.asObjectApi(), api.object, {
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

    await writePatch(api.asObjectApi(), api.object, { status: { phase: 'Ready' } });

    expect(api.writes).toEqual([
      {
        method: 'mergePatch',
        namespace: 'default',
        name: 'w1',
        body: { status: { phase: 'Ready' } },
      },
    ]);
  });

  test('each write lands only on the version it follows: the object read, then the first write', async () => {
    const api = new FakeObjectApi(widget(), widgetResource);
    const read = api.object;

    await writePatch(api.asObjectApi(), read, { spec: { size: 2 }, status: { phase: 'Ready' } });

    const afterStatus = String(Number(read.metadata?.resourceVersion) + 1);
    expect(api.fences).toEqual([read.metadata?.resourceVersion, afterStatus]);
  });

  test('a write meeting a newer version while the object is still handled here is sent again on it', async () => {
    const api = new FakeObjectApi(widget(), widgetResource);
    const read = api.object;
    api.put({ ...read, metadata: { ...read.metadata, labels: { team: 'a' } } }); // a user wrote meanwhile

    await writePatch(api.asObjectApi(), read, { status: { phase: 'Ready' } });

    expect(api.calls.map((call) => call.method)).toEqual(['mergePatch', 'get', 'mergePatch']);
    expect(api.object).toMatchObject({
      metadata: { labels: { team: 'a' } },
      status: { phase: 'Ready' },
    });
  });

  test('a write meeting a newer version after this replica stopped handling the object is superseded, never sent again', async () => {
    const api = new FakeObjectApi(widget(), widgetResource);
    const read = api.object;
    api.put({ ...read, status: { handledSize: 1024 } }); // the replica that took the object over wrote
    const stopped = AbortSignal.abort();

    await expect(
      writePatch(api.asObjectApi(), read, { status: { handledSize: 24 } }, { signal: stopped }),
    ).rejects.toBeInstanceOf(WriteSuperseded);

    expect(api.writes).toHaveLength(1);
    expect(api.object.status).toEqual({ handledSize: 1024 });
  });

  test('conflicts that keep coming reach the caller after a bounded number of rebases', async () => {
    const api = new FakeObjectApi(widget(), widgetResource);
    for (let i = 0; i <= MAX_REBASES; i++) api.failNext(409, 'mergePatch');

    await expect(
      writePatch(api.asObjectApi(), api.object, { status: { phase: 'Ready' } }),
    ).rejects.toMatchObject({ status: 409 });

    expect(api.writes).toHaveLength(MAX_REBASES + 1);
  });
});
