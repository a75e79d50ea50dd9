import { recordCluster } from '../../../src/handlers/etcd/restore-record.js';

describe('a restore records a cluster without any Konductor operator’s bookkeeping', () => {
  it('drops the keys of an operator with its own identity, which it marks', () => {
    const annotations = {
      keep: 'yes',
      'team.example.com/owner': 'ops',
      'etcd.example.com/konductor-managed': 'yes',
      'etcd.example.com/last-handled-configuration': '{}',
      'etcd.example.com/EtcdClusters.created': '{}',
    };
    expect(
      recordCluster({ metadata: { uid: 'u1', annotations }, spec: {} }, []).annotations,
    ).toEqual({ keep: 'yes', 'team.example.com/owner': 'ops' });
  });

  it('keeps annotations of a prefix without the marker: they are the user’s', () => {
    const annotations = { 'etcd.example.com/last-handled-configuration': '{}' };
    expect(
      recordCluster({ metadata: { uid: 'u1', annotations }, spec: {} }, []).annotations,
    ).toEqual(annotations);
  });
});
