import { newestKnown } from '../../../src/handlers/etcd/clusters.js';
import type { EtcdClusterObject } from '../../../src/handlers/etcd/cluster-reconciler.js';

const cluster = (resourceVersion: string, reason?: string): EtcdClusterObject => ({
  apiVersion: 'etcd.database.coreos.com/v1beta2',
  kind: 'EtcdCluster',
  metadata: { name: 'a', namespace: 'n', resourceVersion },
  status: reason === undefined ? {} : { reason },
});

describe('the cluster a worker step starts from', () => {
  test('is the watched body when nothing was written', () => {
    const body = cluster('5');
    expect(newestKnown(body, undefined)).toBe(body);
  });

  test('is the written status while the watch has not delivered it yet', () => {
    const written = cluster('6', 'lost quorum');
    expect(newestKnown(cluster('5'), { from: '5', object: written })).toBe(written);
  });

  test('is the watched body once it moved past the write', () => {
    const body = cluster('7', 'lost quorum');
    expect(newestKnown(body, { from: '5', object: cluster('6', 'lost quorum') })).toBe(body);
  });
});
