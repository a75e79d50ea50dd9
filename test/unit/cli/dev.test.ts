import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Reloader,
  WarmStarter,
  childArguments,
  isWatchedChange,
  watchTargets,
  type BootedChild,
  type DevLog,
  type OperatorProcess,
} from '../../../src/cli/commands/dev.js';
import { DEV_START_MESSAGE } from '../../../src/cli/commands/dev-protocol.js';
import { installFakeClock, type FakeClock } from '../../support/fake-clock.js';

/** An operator process the test starts, readies, stops and crashes by hand. */
class FakeOperator implements OperatorProcess {
  readonly ready: Promise<void>;
  readonly exited: Promise<number | string>;
  markReady!: () => void;
  exit!: (code: number | string) => void;
  stopCalls = 0;

  constructor() {
    this.ready = new Promise((resolve) => (this.markReady = resolve));
    this.exited = new Promise((resolve) => (this.exit = resolve));
  }

  async stop(): Promise<void> {
    this.stopCalls++;
    this.exit(0);
    await this.exited;
  }
}

function recordingLog(): DevLog & { lines: Array<[string, unknown]> } {
  const lines: Array<[string, unknown]> = [];
  const record = (level: string) => (object: unknown, message?: string) =>
    void lines.push([`${level}: ${message ?? ''}`, object]);
  return {
    lines,
    info: record('info') as DevLog['info'],
    warn: record('warn') as DevLog['warn'],
    debug: record('debug') as DevLog['debug'],
  };
}

describe('konductor dev: reloading', () => {
  let clock: FakeClock;
  let operators: FakeOperator[];
  let log: ReturnType<typeof recordingLog>;
  let reloader: Reloader;

  beforeEach(() => {
    clock = installFakeClock({ now: 0 });
    operators = [];
    log = recordingLog();
    reloader = new Reloader(
      () => {
        const operator = new FakeOperator();
        operators.push(operator);
        return operator;
      },
      log,
      100,
      clock.now,
    );
  });

  afterEach(() => {
    clock.uninstall();
  });

  const advance = (ms: number): Promise<void> => clock.advanceAsync(ms);

  test('a burst of saves restarts the operator once, 100 ms after the last one', async () => {
    reloader.start();
    operators[0]!.markReady();
    reloader.changed('handlers.ts');
    await advance(60);
    reloader.changed('handlers.ts');
    await advance(60);
    reloader.changed('lib/greeting.ts');
    await advance(99);
    expect(operators).toHaveLength(1);

    await advance(1);
    expect(operators[0]!.stopCalls).toBe(1);
    expect(operators).toHaveLength(2);
  });

  test('logs "reloaded in N ms" from the first change to the new operator being ready', async () => {
    reloader.start();
    operators[0]!.markReady();
    await advance(0);
    reloader.changed('handlers.ts');
    await advance(100);
    await advance(250);
    operators[1]!.markReady();
    await advance(0);

    expect(log.lines.at(-1)).toEqual([
      'info: reloaded in 350 ms',
      { ms: 350, changed: ['handlers.ts'] },
    ]);
  });

  test('the old operator has exited before the new one starts', async () => {
    const order: string[] = [];
    reloader = new Reloader(
      () => {
        const operator = new FakeOperator();
        const stop = operator.stop.bind(operator);
        operator.stop = async () => {
          order.push(`stop ${operators.indexOf(operator)}`);
          await stop();
        };
        operators.push(operator);
        order.push(`start ${operators.length - 1}`);
        return operator;
      },
      log,
      100,
      clock.now,
    );
    reloader.start();
    reloader.changed('a.ts');
    await advance(100);
    reloader.changed('a.ts');
    await advance(100);
    expect(order).toEqual(['start 0', 'stop 0', 'start 1', 'stop 1', 'start 2']);
  });

  test('an operator that exits by itself (a file that fails to load) is reported, and the next change starts it again', async () => {
    reloader.start();
    operators[0]!.exit(1);
    await advance(0);
    expect(log.lines.at(-1)).toEqual([
      'warn: the operator exited; it starts again at the next change',
      { code: 1 },
    ]);

    reloader.changed('handlers.ts');
    await advance(100);
    expect(operators).toHaveLength(2);
    expect(operators[0]!.stopCalls).toBe(0);
  });

  test('stop() stops the operator and ignores later changes', async () => {
    reloader.start();
    await reloader.stop();
    expect(operators[0]!.stopCalls).toBe(1);
    reloader.changed('handlers.ts');
    await advance(1_000);
    expect(operators).toHaveLength(1);
  });
});

describe('konductor dev: what is watched', () => {
  test('module files count; declarations, tests, node_modules and hidden folders do not', () => {
    for (const file of [
      'handlers.ts',
      'lib/greeting.mts',
      'x.js',
      'y.mjs',
      'z.cts',
      'config.json',
      null,
    ])
      expect({ file, watched: isWatchedChange(file) }).toEqual({ file, watched: true });
    for (const file of [
      'types.d.ts',
      'handlers.test.ts',
      'node_modules/x/index.js',
      '.git/HEAD',
      '.handlers.ts.swp',
      'handlers.ts~',
      'README.md',
      'package-lock.json',
    ]) {
      expect({ file, watched: isWatchedChange(file) }).toEqual({ file, watched: false });
    }
  });

  test('a folder is watched with its subfolders; a file through its own folder only', async () => {
    const root = mkdtempSync(join(tmpdir(), 'konductor-dev-'));
    try {
      mkdirSync(join(root, 'handlers'));
      writeFileSync(join(root, 'main.ts'), '');
      writeFileSync(join(root, 'handlers', 'a.ts'), '');
      expect(await watchTargets([join(root, 'main.ts'), join(root, 'handlers')])).toEqual([
        { dir: root, recursive: false },
        { dir: join(root, 'handlers'), recursive: true },
      ]);
      // Two files of one folder: one watch; a folder given as well makes it recursive.
      expect(await watchTargets([join(root, 'handlers', 'a.ts'), join(root, 'handlers')])).toEqual([
        { dir: join(root, 'handlers'), recursive: true },
      ]);
      await expect(watchTargets([join(root, 'missing.ts')])).rejects.toThrow(
        /missing\.ts does not exist/,
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test('the restarted child is `konductor run` with the same arguments and the standalone choice made explicit', () => {
    expect(childArguments(['src/handlers.ts', '-n', 'dev'], { standalone: true })).toEqual([
      'run',
      '--standalone',
      'src/handlers.ts',
      '-n',
      'dev',
    ]);
    expect(childArguments(['h.ts', '--no-standalone'], { standalone: false })).toEqual([
      'run',
      '--no-standalone',
      'h.ts',
      '--no-standalone',
    ]);
  });
});

describe('konductor dev: warm starts', () => {
  /** A booted child the test readies and ends by hand; it records what it was sent. */
  function fakeBooted(): BootedChild & {
    sent: unknown[];
    markReady: () => void;
    signals: string[];
  } {
    const sent: unknown[] = [];
    const signals: string[] = [];
    let markReady!: () => void;
    const ready = new Promise<void>((resolve) => (markReady = resolve));
    const child = {
      exitCode: null,
      signalCode: null,
      connected: true,
      send: (message: unknown) => sent.push(message),
      kill: (signal: string) => signals.push(signal),
    };
    return {
      child: child as unknown as ChildProcess,
      booted: Promise.resolve(),
      ready,
      exited: new Promise(() => undefined),
      sent,
      markReady,
      signals,
    };
  }

  test('starts the first operator at once, boots a spare once it is ready, and starts the next operator from the spare', async () => {
    const booted: Array<ReturnType<typeof fakeBooted>> = [];
    const starter = new WarmStarter(['run', '--standalone', 'h.ts'], recordingLog(), () => {
      const child = fakeBooted();
      booted.push(child);
      return child;
    });

    starter.start();
    expect(booted).toHaveLength(1);
    expect(booted[0]!.sent).toEqual([DEV_START_MESSAGE]);

    booted[0]!.markReady();
    await Promise.resolve();
    await Promise.resolve();
    expect(booted).toHaveLength(2);
    expect(booted[1]!.sent).toEqual([]);

    starter.start();
    expect(booted).toHaveLength(2);
    expect(booted[1]!.sent).toEqual([DEV_START_MESSAGE]);
  });

  test('close ends the spare', async () => {
    const booted: Array<ReturnType<typeof fakeBooted>> = [];
    const starter = new WarmStarter([], recordingLog(), () => {
      const child = fakeBooted();
      booted.push(child);
      return child;
    });
    starter.start();
    booted[0]!.markReady();
    await Promise.resolve();
    await Promise.resolve();
    starter.close();
    expect(booted[1]!.signals).toEqual(['SIGTERM']);
  });
});
