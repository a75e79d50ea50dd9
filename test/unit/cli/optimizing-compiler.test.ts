import { setFlagsFromString } from 'node:v8';
import {
  optimizingCompilerPaused,
  pauseOptimizingCompiler,
  resumeOptimizingCompiler,
  startupCompiler,
} from '../../../src/cli/optimizing-compiler.js';

describe('TurboFan during konductor run start-up', () => {
  test('started by bin/konductor with --no-opt, it is paused already and resumed later', () => {
    expect(
      startupCompiler({
        execArgv: ['--max-old-space-size=512', '--no-opt'],
        launcherFlags: ' --max-old-space-size=512 --no-opt',
      }),
    ).toBe('paused');
  });

  test('started another way (node konductor.mjs, the Deployment, a dev child), konductor pauses it', () => {
    expect(startupCompiler({ execArgv: ['--max-old-space-size=192'] })).toBe('pause');
  });

  test.each([
    [{ execArgv: ['--no-opt'] }],
    [{ execArgv: ['--jitless'] }],
    [{ execArgv: ['--turbofan'] }],
    [{ execArgv: [], nodeOptions: '--max-old-space-size=100 --lite-mode' }],
    [{ execArgv: ['--no-opt', '--no-sparkplug'], launcherFlags: '--no-opt' }],
  ])('compiler flags the user chose leave it alone: %j', (inputs) => {
    expect(startupCompiler(inputs)).toBe('leave');
  });

  test('a flag that merely starts with the words is no compiler flag', () => {
    expect(startupCompiler({ execArgv: ['--optimize-for-size'] })).toBe('pause');
  });
});

describe('pausing and resuming TurboFan in this process', () => {
  // V8's own view of a function (natives syntax, allowed for this test only).
  setFlagsFromString('--allow-natives-syntax');
  const optimizationStatus = new Function('f', 'return %GetOptimizationStatus(f)') as (
    f: unknown,
  ) => number;
  const TURBOFANNED = 1 << 4;

  /** Calls a fresh function until V8 optimizes it or `calls` calls are made; whether it was. */
  function optimizedAfter(calls: number): boolean {
    const hot = new Function(
      'x',
      'let s = 0; for (let i = 0; i < 50; i++) s += (x * i) % 7; return s;',
    ) as (x: number) => number;
    for (let i = 0; i < calls; i++) {
      hot(i);
      if (optimizationStatus(hot) & TURBOFANNED) return true;
    }
    return false;
  }

  test('a hot function is not optimized while paused, and is once resumed', () => {
    pauseOptimizingCompiler({}, []);
    try {
      expect(optimizingCompilerPaused()).toBe(true);
      expect(optimizedAfter(200_000)).toBe(false);
    } finally {
      resumeOptimizingCompiler();
    }
    expect(optimizingCompilerPaused()).toBe(false);
    expect(optimizedAfter(2_000_000)).toBe(true);
  });
});
