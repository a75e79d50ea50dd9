/**
 * The framework's writes on the real API server: each lands only on the version it was decided on,
 * so a write held up in the network (a partition that heals) never lands over a newer write of the
 * replica that took the object over.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiClient, type KubeObject } from '../../../src/framework/index.js';
import { ObjectApi } from '../../../src/framework/api/object-api.js';
import { writePatch, WriteSuperseded } from '../../../src/framework/processing/patch-writer.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { installWidgetCrd, widgetResource, Widgets } from '../../support/widgets.js';

let kc: KubeConfig;
let client: ApiClient;
let api: ObjectApi;
let namespace: string;

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installWidgetCrd(kc);
  client = new ApiClient(kc, { fieldManager: 'fenced-writes-spec' });
  api = new ObjectApi(client, widgetResource);
  namespace = await uniqueNamespace(kc, 'fenced');
});

afterAll(() => client.close());

/** A Widget `name` as its old owner read it, after which its new owner wrote `status.handledSize: 1024`. */
async function readThenOvertaken(name: string): Promise<KubeObject> {
  await new Widgets(kc, namespace).create(name);
  const read = await api.get(namespace, name);
  await api.mergePatch(namespace, name, { status: { handledSize: 1024 } }, 'status');
  return read;
}

test('a status write decided on an older version, from a replica that stopped handling the object, is refused and leaves the newer status', async () => {
  const read = await readThenOvertaken('late-status');

  const late = writePatch(
    api,
    read,
    { status: { handledSize: 24 } },
    { signal: AbortSignal.abort() },
  );

  await expect(late).rejects.toBeInstanceOf(WriteSuperseded);
  expect((await api.get(namespace, 'late-status')).status).toEqual({ handledSize: 1024 });
});

test('an object write decided on an older version, from a replica that stopped handling the object, is refused and leaves the object as it is', async () => {
  const read = await readThenOvertaken('late-object');
  const before = await api.get(namespace, 'late-object');

  const late = writePatch(
    api,
    read,
    { metadata: { annotations: { 'example.com/size': '24' } } },
    { signal: AbortSignal.abort() },
  );

  await expect(late).rejects.toBeInstanceOf(WriteSuperseded);
  const after = await api.get(namespace, 'late-object');
  expect(after.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
});

test('a write decided on an older version, from a replica still handling the object, lands on the newest version', async () => {
  const read = await readThenOvertaken('still-ours');

  await writePatch(api, read, {
    metadata: { annotations: { 'example.com/size': '24' } },
    status: { phase: 'Ready' },
  });

  const after = await api.get(namespace, 'still-ours');
  expect(after.status).toEqual({ handledSize: 1024, phase: 'Ready' });
  expect(after.metadata?.annotations?.['example.com/size']).toBe('24');
});
