import { redactToken } from '../../../src/handlers/etcd/backup-server.js';
import {
  seedAttempt,
  seedFailedAt,
  seedFailure,
  seedRetryDelayMs,
  type DeadSeed,
} from '../../../src/handlers/etcd/seed-retry.js';

describe('a failed seed member is retried with a growing back-off', () => {
  it('waits 5 s after the first failure, doubling, at most 5 minutes', () => {
    expect([1, 2, 3, 4, 7, 50].map(seedRetryDelayMs)).toEqual([
      5_000, 10_000, 20_000, 40_000, 300_000, 300_000,
    ]);
  });

  it('reads the attempt from the Pod annotation, treating a forged value as the first', () => {
    const pod = (value?: string): DeadSeed => ({
      metadata: {
        annotations: value === undefined ? {} : { 'etcd.database.coreos.com/seed-attempt': value },
      },
    });
    expect(seedAttempt(pod('3'))).toBe(3);
    expect(seedAttempt(pod())).toBe(1);
    expect(seedAttempt(pod('1e9'))).toBe(1);
    expect(seedAttempt(pod('-2'))).toBe(1);
  });

  it('times the failure from the last container to stop', () => {
    const pod = {
      metadata: { creationTimestamp: '2024-01-01T00:00:00Z' },
      status: {
        initContainerStatuses: [
          {
            name: 'fetch-backup',
            state: { terminated: { exitCode: 22, finishedAt: '2024-01-01T00:00:07Z' } },
          },
        ],
      },
    };
    expect(seedFailedAt(pod)).toBe(Date.parse('2024-01-01T00:00:07Z'));
    expect(seedFailure(pod)).toBe('container fetch-backup exited with code 22');
  });

  it('never repeats a download token', () => {
    expect(redactToken('curl http://x/v1/backup/ns/r?token=abc123 failed')).toBe(
      'curl http://x/v1/backup/ns/r?token=<redacted> failed',
    );
  });
});
