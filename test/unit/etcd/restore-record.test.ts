import {
  readRestoreRecord,
  recordCluster,
  restoreSource,
  restoreSpecProblem,
  startProblem,
} from '../../../src/handlers/etcd/restore-record.js';

describe('an EtcdRestore names only its own cluster', () => {
  it('a cluster name with path segments is refused', () => {
    expect(
      restoreSpecProblem('victim', { etcdCluster: { name: '../../victim/etcdclusters/victim' } }),
    ).toMatch(/DNS-1123/);
  });

  it("a cluster name other than the restore's own is refused, as upstream", () => {
    expect(restoreSpecProblem('mine', { etcdCluster: { name: 'other' } })).toMatch(
      /must equal the EtcdRestore's own name \(mine\)/,
    );
  });

  it("the restore's own name is accepted", () => {
    expect(restoreSpecProblem('mine', { etcdCluster: { name: 'mine' } })).toBeUndefined();
  });
});

describe('the record in an EtcdRestore status', () => {
  const token = 'ab'.repeat(32);
  const sha256 = 'cd'.repeat(32);

  it('reads back what the operator wrote', () => {
    const status = {
      token,
      source: {
        backupStorageType: 'S3',
        s3: { path: 'b/k', awsSecret: 'aws', endpoint: 'http://minio:9000' },
      },
      backup: { size: 100, sha256, location: 's3://b/k' },
      cluster: { uid: 'u1', spec: { size: 3 }, labels: { a: 'b' } },
    };
    expect(readRestoreRecord(status)).toEqual(status);
  });

  it('drops parts that do not have the expected shape', () => {
    expect(
      readRestoreRecord({
        token: 'short',
        backup: { size: '1', sha256, location: 'x' },
        cluster: { spec: {} },
        source: { backupStorageType: 'GCS' },
      }),
    ).toEqual({});
    expect(readRestoreRecord('garbage')).toEqual({});
  });

  it('keeps only the storage fields of a spec', () => {
    expect(
      restoreSource({
        backupStorageType: 'Local',
        local: { path: 'x.db', extra: 1 } as never,
        s3: { path: 'ignored' },
      }),
    ).toEqual({ backupStorageType: 'Local', local: { path: 'x.db' } });
  });

  it('records a cluster without the annotations of an earlier restore or the framework', () => {
    const recorded = recordCluster(
      {
        metadata: {
          uid: 'u1',
          labels: { team: 'a' },
          annotations: {
            keep: 'yes',
            'konductor.dev/last-handled-configuration': '{}',
            'etcd.database.coreos.com/restored-by': 'x',
          },
        },
        spec: { size: 3 },
      },
      ['etcd.database.coreos.com/restored-by'],
    );
    expect(recorded).toEqual({
      uid: 'u1',
      spec: { size: 3 },
      labels: { team: 'a' },
      annotations: { keep: 'yes' },
    });
  });
});

describe('a started restore acts on its record, not on the editable spec', () => {
  const record = {
    token: 'a'.repeat(64),
    source: { backupStorageType: 'Local' as const, local: { path: 'db.db' } },
  };

  it('before anything is recorded, a spec naming another cluster is refused', () => {
    expect(startProblem('db', { etcdCluster: { name: 'other' } }, {})).toContain(
      "must equal the EtcdRestore's own name",
    );
  });

  it('once the record exists, editing spec.etcdCluster.name does not strand the restore', () => {
    expect(startProblem('db', { etcdCluster: { name: 'other' } }, record)).toBeUndefined();
    expect(startProblem('db', undefined, record)).toBeUndefined();
  });
});
