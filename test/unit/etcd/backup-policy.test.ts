import {
  backupIntervalSeconds,
  backupTimeoutSeconds,
  localQuotaProblem,
  MAX_BACKUP_TIMEOUT_SECONDS,
} from '../../../src/handlers/etcd/backup-policy.js';

describe('an EtcdBackup cannot hold a handler slot for as long as it likes', () => {
  it.each([
    [undefined, 60],
    [0, 60],
    [120, 120],
    [MAX_BACKUP_TIMEOUT_SECONDS, MAX_BACKUP_TIMEOUT_SECONDS],
    [10 ** 12, MAX_BACKUP_TIMEOUT_SECONDS],
    [Number.MAX_SAFE_INTEGER, MAX_BACKUP_TIMEOUT_SECONDS],
    ['7200', MAX_BACKUP_TIMEOUT_SECONDS],
  ])('timeoutInSecond %p gives a snapshot timeout of %p s', (value, seconds) => {
    expect(backupTimeoutSeconds(value)).toBe(seconds);
  });
});

describe('Local backups cannot fill the shared disk', () => {
  it.each([
    [undefined, 0],
    [0, 0],
    [1, 10],
    [9, 10],
    [30, 30],
    [2_592_000, 2_592_000],
  ])('backupIntervalInSecond %p runs every %p s by default (one-shot is 0)', (value, seconds) => {
    expect(backupIntervalSeconds(value, {})).toBe(seconds);
  });

  it('the minimum interval is configurable', () => {
    expect(backupIntervalSeconds(1, { KONDUCTOR_MIN_BACKUP_INTERVAL_SECONDS: '60' })).toBe(60);
    expect(backupIntervalSeconds(1, { KONDUCTOR_MIN_BACKUP_INTERVAL_SECONDS: 'nonsense' })).toBe(
      10,
    );
  });

  it('a namespace at its cap of Local backup files gets no new one, with a reason naming the limit', () => {
    expect(localQuotaProblem('team-a', 999, false, {})).toBeUndefined();
    expect(localQuotaProblem('team-a', 1000, false, {})).toMatch(
      /team-a already holds 1000 Local backup files.*KONDUCTOR_MAX_LOCAL_BACKUPS_PER_NAMESPACE=1000/,
    );
    expect(
      localQuotaProblem('team-a', 3, false, { KONDUCTOR_MAX_LOCAL_BACKUPS_PER_NAMESPACE: '3' }),
    ).toBeDefined();
  });

  it('replacing a file it already has (a one-shot backup taken again) is allowed at the cap', () => {
    expect(localQuotaProblem('team-a', 1000, true, {})).toBeUndefined();
  });
});
