import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManagedProcess } from '../../../src/testing/managed-process.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'konductor-managed-process-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('ManagedProcess.start', () => {
  test('a slow start that keeps logging is waited for beyond the timeout, which only bounds a stall', async () => {
    const log = join(dir, 'program.log');
    // Ready after some 4 s of steady start-up output, with a 1.5 s timeout.
    const script =
      'i=0; while [ $i -lt 20 ]; do echo "starting $i"; i=$((i+1)); sleep 0.2; done; echo ready; exec sleep 60';
    const program = new ManagedProcess('slow-program', '/bin/sh', ['-c', script], log, dir);
    try {
      await program.start(
        () => Promise.resolve(readFileSync(log, 'utf8').includes('ready')),
        1_500,
      );

      expect(readFileSync(log, 'utf8')).toContain('starting 19');
    } finally {
      await program.stop('SIGKILL');
    }
  });

  test('a program that is alive but silent and never ready fails after the timeout, saying what it last saw', async () => {
    const program = new ManagedProcess(
      'silent-program',
      '/bin/sh',
      ['-c', 'exec sleep 60'],
      join(dir, 'program.log'),
      dir,
    );
    try {
      await expect(
        program.start(
          () => Promise.resolve({ ready: false, seen: 'GET /readyz answered 500' }),
          500,
        ),
      ).rejects.toThrow(
        /silent-program was not ready and made no progress for 500 ms \(last seen: GET \/readyz answered 500/,
      );
      expect(program.running).toBe(false);
    } finally {
      await program.stop('SIGKILL');
    }
  });
});
