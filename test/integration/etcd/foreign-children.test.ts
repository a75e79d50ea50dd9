/**
 * In a shared namespace, deleting an EtcdCluster deletes only what the cluster controls: a Pod that
 * merely carries its member labels and a Service named like its client Service are someone else's.
 * They stay, and a Warning Event on the cluster names each.
 */
import { CoreV1Api, type KubeConfig, type V1Pod, type V1Service } from '@kubernetes/client-node';
import { ApiError } from '../../../src/framework/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import {
  ETCD_API,
  eventsFor,
  etcdObjectPath,
  installEtcdCrds,
  startEtcdOperator,
  type EtcdHarness,
} from '../../support/etcd.js';
import { waitFor } from '../../support/wait-for.js';

let kc: KubeConfig;
let core: CoreV1Api;
let h: EtcdHarness | undefined;

beforeAll(async () => {
  kc = sharedKubeConfig();
  core = kc.makeApiClient(CoreV1Api);
  await installEtcdCrds(kc);
});
afterAll(async () => {
  await h?.stop();
});

const identity = (object: V1Pod | V1Service): unknown => ({
  uid: object.metadata?.uid,
  deletionTimestamp: object.metadata?.deletionTimestamp,
});

describe('deleting an EtcdCluster in a shared namespace', () => {
  test('leaves a foreign Pod with its member labels and a foreign Service of its client Service’s name, and names them in Warnings', async () => {
    const namespace = await uniqueNamespace(kc, 'etcd-foreign');
    const pod = await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'someone-elses', labels: { app: 'etcd', etcd_cluster: 'db' } },
        spec: { containers: [{ name: 'app', image: 'example.com/app:1' }] },
      },
    });
    const service = await core.createNamespacedService({
      namespace,
      body: { metadata: { name: 'db-client' }, spec: { ports: [{ port: 80 }] } },
    });
    h = await startEtcdOperator(kc, namespace, { runPods: false });

    await h.api.request('POST', etcdObjectPath(namespace, 'etcdclusters'), {
      body: {
        apiVersion: ETCD_API,
        kind: 'EtcdCluster',
        metadata: { name: 'db' },
        spec: { size: 1 },
      },
    });
    // The cluster's own seed member Pod (Pending: nothing runs Pods here) shows the operator has taken the cluster on.
    const ownPods = async (): Promise<string[]> =>
      (await core.listNamespacedPod({ namespace, labelSelector: 'app=etcd,etcd_cluster=db' })).items
        .filter((item) =>
          item.metadata?.ownerReferences?.some(
            (owner) => owner.controller === true && owner.kind === 'EtcdCluster',
          ),
        )
        .map((item) => item.metadata?.name ?? '');
    const seeds = await waitFor(
      async () => {
        const pods = await ownPods();
        return pods.length > 0 ? pods : undefined;
      },
      { what: 'the cluster’s own seed Pod' },
    );
    await h.api.request('DELETE', etcdObjectPath(namespace, 'etcdclusters', 'db'));
    await waitFor(
      () =>
        h!.api.request('GET', etcdObjectPath(namespace, 'etcdclusters', 'db')).then(
          () => false,
          (error: unknown) => (ApiError.isNotFound(error) ? true : Promise.reject(error)),
        ),
      { what: 'the EtcdCluster to be deleted' },
    );

    // The Pods it had before the delete are gone (one its worker was still creating as the delete came
    // is left to the garbage collector, which this plane does not run).
    const remaining = await ownPods();
    expect(seeds!.filter((seed) => remaining.includes(seed))).toEqual([]);
    expect(identity(await core.readNamespacedPod({ namespace, name: 'someone-elses' }))).toEqual(
      identity(pod),
    );
    expect(identity(await core.readNamespacedService({ namespace, name: 'db-client' }))).toEqual(
      identity(service),
    );
    await waitFor(
      async () =>
        (await eventsFor(h!, 'db')).filter((event) => event.reason === 'ForeignChild').length >= 2,
      { what: 'the Warnings naming the foreign objects' },
    );
    const warnings = (await eventsFor(h, 'db')).filter((event) => event.reason === 'ForeignChild');
    expect(warnings.map((event) => event.type)).toEqual(['Warning', 'Warning']);
    const messages = warnings.map((event) => event.message ?? '').join('\n');
    expect(messages).toContain(
      `Pod ${namespace}/someone-elses exists but is not controlled by EtcdCluster ${namespace}/db`,
    );
    expect(messages).toContain(
      `Service ${namespace}/db-client exists but is not controlled by EtcdCluster ${namespace}/db`,
    );
  }, 90_000);
});
