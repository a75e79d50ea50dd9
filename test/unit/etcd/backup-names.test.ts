import {
  backupsToDelete,
  parseBackupName,
  periodicBackupName,
} from '../../../src/handlers/etcd/storage/backup-names.js';

const at = (iso: string): Date => new Date(iso);

describe('periodicBackupName', () => {
  it('formats like the original: <prefix>_v<revision>_<UTC 2006-01-02-15:04:05>', () => {
    expect(periodicBackupName('bucket/etcd/c1', 1234, at('2024-03-05T07:08:09.999Z'))).toBe(
      'bucket/etcd/c1_v1234_2024-03-05-07:08:09',
    );
  });

  it('uses UTC whatever the Date was built from, and accepts int64 revisions as strings and bigints', () => {
    const when = new Date(Date.UTC(2023, 11, 31, 23, 59, 59));
    expect(periodicBackupName('p', '9223372036854775807', when)).toBe(
      'p_v9223372036854775807_2023-12-31-23:59:59',
    );
    expect(periodicBackupName('p', 5n, when)).toBe('p_v5_2023-12-31-23:59:59');
  });

  it('rejects revisions that are not non-negative integers and invalid dates', () => {
    expect(() => periodicBackupName('p', -1, new Date())).toThrow(/non-negative integer/);
    expect(() => periodicBackupName('p', '1e3', new Date())).toThrow(/non-negative integer/);
    expect(() => periodicBackupName('p', 1, new Date(Number.NaN))).toThrow(/invalid Date/);
  });
});

describe('parseBackupName', () => {
  it('round-trips periodicBackupName', () => {
    const when = at('2024-03-05T07:08:09Z');
    expect(parseBackupName('a/b', periodicBackupName('a/b', 42, when))).toEqual({
      revision: 42n,
      at: when,
    });
  });

  it('keeps revisions beyond Number.MAX_SAFE_INTEGER exact', () => {
    expect(parseBackupName('p', 'p_v9007199254740993_2024-01-01-00:00:00')?.revision).toBe(
      9007199254740993n,
    );
  });

  it.each([
    ['the one-shot object', 'p'],
    ['another prefix', 'q_v1_2024-01-01-00:00:00'],
    ['a longer prefix that starts with ours', 'p2_v1_2024-01-01-00:00:00'],
    ['a series whose prefix extends ours', 'p_v1_x_v2_2024-01-01-00:00:00'],
    ['a missing revision', 'p_v_2024-01-01-00:00:00'],
    ['a truncated time', 'p_v1_2024-01-01-00:00'],
    ['trailing text', 'p_v1_2024-01-01-00:00:00.partial-abc'],
    ['an impossible month', 'p_v1_2024-13-01-00:00:00'],
    ['an impossible day', 'p_v1_2024-02-30-00:00:00'],
  ])('ignores %s', (_what, name) => {
    expect(parseBackupName('p', name)).toBeUndefined();
  });
});

describe('backupsToDelete', () => {
  const prefix = 'bucket/c1';

  it('keeps the newest when the revision gains a digit (_v99_ vs _v100_), unlike the original name sort', () => {
    const older = `${prefix}_v99_2024-01-01-00:00:00`;
    const newer = `${prefix}_v100_2024-01-01-00:01:00`;
    // Reverse lexicographic order puts _v99_ first and would delete _v100_.
    expect([older, newer].sort().reverse()[0]).toBe(older);
    expect(backupsToDelete(prefix, [older, newer], 1)).toEqual([older]);
    expect(backupsToDelete(prefix, [newer, older], 1)).toEqual([older]);
  });

  it('breaks same-second ties by revision, newest kept', () => {
    const names = [
      `${prefix}_v100_2024-01-01-00:00:00`,
      `${prefix}_v99_2024-01-01-00:00:00`,
      `${prefix}_v101_2024-01-01-00:00:00`,
    ];
    expect(backupsToDelete(prefix, names, 1)).toEqual([
      `${prefix}_v100_2024-01-01-00:00:00`,
      `${prefix}_v99_2024-01-01-00:00:00`,
    ]);
    expect(backupsToDelete(prefix, names, 2)).toEqual([`${prefix}_v99_2024-01-01-00:00:00`]);
  });

  it('orders by time before revision (a restored cluster restarts at a lower revision)', () => {
    const before = `${prefix}_v500_2024-01-01-00:00:00`;
    const after = `${prefix}_v3_2024-01-02-00:00:00`;
    expect(backupsToDelete(prefix, [before, after], 1)).toEqual([before]);
  });

  it('never deletes names that do not parse, and does not count them', () => {
    const names = [
      prefix, // the one-shot object
      `${prefix}_v1_2024-01-01-00:00:00`,
      `${prefix}_v2_2024-01-02-00:00:00`,
      `${prefix}-notes.txt`,
      `${prefix}_v3_garbage`,
    ];
    expect(backupsToDelete(prefix, names, 1)).toEqual([`${prefix}_v1_2024-01-01-00:00:00`]);
    expect(backupsToDelete(prefix, names, 2)).toEqual([]);
  });

  it('keeps everything for maxBackups <= 0, and when there are not more than maxBackups', () => {
    const names = [`${prefix}_v1_2024-01-01-00:00:00`, `${prefix}_v2_2024-01-02-00:00:00`];
    expect(backupsToDelete(prefix, names, 0)).toEqual([]);
    expect(backupsToDelete(prefix, names, -3)).toEqual([]);
    expect(backupsToDelete(prefix, names, Number.NaN)).toEqual([]);
    expect(backupsToDelete(prefix, names, 2)).toEqual([]);
    expect(backupsToDelete(prefix, [], 1)).toEqual([]);
  });

  it('returns every old backup, oldest last, and ignores duplicate names', () => {
    const names = Array.from({ length: 5 }, (_, i) =>
      periodicBackupName(prefix, 10 ** i, new Date(Date.UTC(2024, 0, 1, 0, i))),
    );
    expect(backupsToDelete(prefix, [...names, names[0]!], 2)).toEqual([
      names[2],
      names[1],
      names[0],
    ]);
  });
});
