import { readClusterSpec } from '../../../src/handlers/etcd/cluster-spec.js';
import {
  newestBackupOf,
  quorumKept,
  quorumLost,
  quorumLostSince,
  readRestorePolicy,
  recoveryClockRuns,
  restoreDueInMs,
  type BackupObject,
} from '../../../src/handlers/etcd/restore-policy.js';

const T0 = new Date('2026-01-01T00:00:00Z');
const at = (seconds: number): Date => new Date(T0.getTime() + seconds * 1000);

function backup(
  name: string,
  options: {
    cluster?: unknown;
    revision?: unknown;
    date?: string;
    path?: unknown;
    storage?: Partial<NonNullable<BackupObject['spec']>>;
  } = {},
): BackupObject {
  return {
    metadata: { name },
    spec: {
      etcdEndpoints: ['http://db-client:2379'],
      storageType: 'Local',
      local: { path: `${name}/db` },
      ...options.storage,
    },
    status: {
      etcdRevision: options.revision ?? 10,
      lastSuccessDate: options.date ?? '2026-01-01T00:00:00Z',
      lastBackupPath: options.path ?? `${name}/db_v10`,
      lastBackupCluster: 'cluster' in options ? options.cluster : 'db',
    },
  };
}

describe('spec.restorePolicy opts a cluster in to disaster recovery', () => {
  it('is off when absent, as in the original operator', () => {
    expect(readRestorePolicy(undefined)).toEqual({});
    expect(readClusterSpec({ size: 3 })).toEqual({
      spec: expect.not.objectContaining({ restorePolicy: expect.anything() }),
    });
  });

  it('waits 60 s of lost quorum unless told otherwise', () => {
    expect(readRestorePolicy({})).toEqual({ policy: { afterQuorumLostSeconds: 60 } });
    expect(readRestorePolicy({ afterQuorumLostSeconds: 10 })).toEqual({
      policy: { afterQuorumLostSeconds: 10 },
    });
  });

  it.each([[0], [4], [86_401], [1.5], ['60'], [Number.NaN]])(
    'refuses afterQuorumLostSeconds %p, naming the range',
    (value) => {
      expect(readRestorePolicy({ afterQuorumLostSeconds: value })).toEqual({
        problem: expect.stringContaining('from 5 to 86400'),
      });
    },
  );

  it('refuses a restorePolicy that is not an object, as an invalid spec', () => {
    expect(readClusterSpec({ size: 3, restorePolicy: 'yes' as never })).toEqual({
      problems: [expect.stringContaining('spec.restorePolicy must be an object')],
    });
  });
});

describe('the Quorum condition keeps when quorum was lost', () => {
  it('dates the loss from the first look that saw it, whatever the message says later', () => {
    const first = quorumLost(undefined, 'lost quorum: 1 of 3 members are running', at(0));
    const later = quorumLost(first, 'lost quorum: 0 of 3 members are running', at(30));
    expect(quorumLostSince(later)).toBe(at(0).getTime());
  });

  it('turns True again once a majority runs, and a cluster that never lost quorum carries no condition', () => {
    expect(quorumKept(undefined)).toBeUndefined();
    const regained = quorumKept(quorumLost(undefined, 'lost', at(0)), at(5));
    expect(regained).toEqual([
      expect.objectContaining({
        type: 'Quorum',
        status: 'True',
        lastTransitionTime: '2026-01-01T00:00:05Z',
      }),
    ]);
    expect(quorumLostSince(regained)).toBeUndefined();
  });

  it('does not run the recovery clock during an upgrade, nor while an added member has never started', () => {
    const upgrading = [{ type: 'Upgrading' as const, status: 'True' as const }];
    expect(recoveryClockRuns(upgrading, [{ name: 'a' }])).toBe(false);
    expect(recoveryClockRuns(undefined, [{ name: 'a' }, { name: '' }])).toBe(false);
    expect(
      recoveryClockRuns([{ type: 'Upgrading', status: 'False' }], [{ name: 'a' }, { name: 'b' }]),
    ).toBe(true);
    expect(recoveryClockRuns(undefined)).toBe(true);
  });

  it('restores when the policy time has passed, and says how long is left before that', () => {
    const policy = { afterQuorumLostSeconds: 60 };
    expect(restoreDueInMs(policy, at(0).getTime(), at(45).getTime())).toBe(15_000);
    expect(restoreDueInMs(policy, at(0).getTime(), at(61).getTime())).toBe(0);
    expect(restoreDueInMs(undefined, at(0).getTime(), at(61).getTime())).toBeUndefined();
    expect(restoreDueInMs(policy, undefined, at(61).getTime())).toBeUndefined();
  });
});

describe('disaster recovery restores the newest backup taken of the cluster', () => {
  it('picks the newest by lastSuccessDate, then revision, and names the file that backup last wrote', () => {
    const found = newestBackupOf('db', [
      backup('nightly', { date: '2026-01-01T00:00:00Z', revision: 50 }),
      backup('hourly', {
        date: '2026-01-01T01:00:00Z',
        revision: 40,
        path: 'hourly/db_v40_2026-01-01-01:00:00',
      }),
    ]);
    expect(found).toEqual({
      backup: 'hourly',
      revision: 40,
      takenAt: '2026-01-01T01:00:00Z',
      source: { backupStorageType: 'Local', local: { path: 'hourly/db_v40_2026-01-01-01:00:00' } },
    });
  });

  it("keeps an S3 backup's credentials Secret and endpoint, and reads the exact object it wrote", () => {
    const s3 = {
      path: 'bucket/db',
      awsSecret: 'aws',
      endpoint: 'http://s3:9000',
      forcePathStyle: true,
    };
    const found = newestBackupOf('db', [
      backup('to-s3', {
        storage: { storageType: 'S3', s3, local: undefined },
        path: 'bucket/db_v10_x',
      }),
    ]);
    expect(found?.source).toEqual({
      backupStorageType: 'S3',
      s3: { ...s3, path: 'bucket/db_v10_x' },
    });
  });

  it('ignores files that hold another cluster, or several, as recorded when they were written, whatever the spec names now', () => {
    const repointed = backup('repointed', { cluster: 'other' });
    expect(repointed.spec?.etcdEndpoints).toEqual(['http://db-client:2379']);
    expect(
      newestBackupOf('db', [
        repointed,
        backup('several', { cluster: null }),
        backup('unrecorded', { cluster: undefined }),
      ]),
    ).toBeUndefined();
  });

  it('ignores a backup that has written nothing, or whose status does not read as one', () => {
    expect(
      newestBackupOf('db', [
        { metadata: { name: 'never' }, spec: backup('never').spec, status: { etcdRevision: 0 } },
        backup('forged-revision', { revision: '12' }),
        backup('forged-path', { path: 7 }),
        backup('no-secret', { storage: { storageType: 'S3', s3: { path: 'b/k' } } }),
      ]),
    ).toBeUndefined();
  });
});
