import { nextRunAt, type TimerState } from '../../../src/framework/engines/schedule.js';

const T0 = 1_000_000;
const seen = (extra: Partial<TimerState> = {}): TimerState => ({
  firstSeen: T0,
  lastChange: T0,
  ...extra,
});

describe('timer schedule', () => {
  test('the first run is at first sight, or after the initial delay', () => {
    expect(nextRunAt({ intervalMs: 10_000 }, seen())).toBe(T0);
    expect(nextRunAt({ intervalMs: 10_000, initialDelayMs: 3_000 }, seen())).toBe(T0 + 3_000);
  });

  test('a non-sharp interval is measured from the end of the previous run, so a slow run pushes the next one back', () => {
    const state = seen({ lastStart: T0, lastEnd: T0 + 3_000 });
    expect(nextRunAt({ intervalMs: 10_000 }, state)).toBe(T0 + 13_000);
  });

  test('a sharp interval keeps a fixed grid from the previous start', () => {
    expect(
      nextRunAt({ intervalMs: 10_000, sharp: true }, seen({ lastStart: T0, lastEnd: T0 + 3_000 })),
    ).toBe(T0 + 10_000);
  });

  test('a sharp timer whose run outlasted the interval skips to the next grid point instead of overlapping', () => {
    expect(
      nextRunAt({ intervalMs: 10_000, sharp: true }, seen({ lastStart: T0, lastEnd: T0 + 25_000 })),
    ).toBe(T0 + 30_000);
  });

  test('a sharp timer keeps the grid it planned: a late start does not move the next run', () => {
    const lateStart = seen({
      gridAnchor: T0,
      lastPlanned: T0 + 20_000,
      lastStart: T0 + 20_400,
      lastEnd: T0 + 21_000,
    });
    expect(nextRunAt({ intervalMs: 10_000, sharp: true }, lateStart)).toBe(T0 + 30_000);
  });

  test('a sharp timer late on every run still runs its k-th time at the first planned start + k × interval', () => {
    const schedule = { intervalMs: 1_000, sharp: true };
    let state = seen({ gridAnchor: T0 });
    let planned = T0;
    for (let k = 1; k <= 1_000; k++) {
      const start = planned + 30; // every run starts 30 ms late and takes 10 ms
      state = { ...state, lastPlanned: planned, lastStart: start, lastEnd: start + 10 };
      planned = nextRunAt(schedule, state)!;
      expect(planned).toBe(T0 + k * 1_000);
    }
  });

  test('a sharp timer whose run overran several slots resumes at the first slot after it ended, without a burst of missed ones', () => {
    const overran = seen({
      gridAnchor: T0,
      lastPlanned: T0 + 10_000,
      lastStart: T0 + 10_050,
      lastEnd: T0 + 45_000,
    });
    expect(nextRunAt({ intervalMs: 10_000, sharp: true }, overran)).toBe(T0 + 50_000);
  });

  test('a sharp timer whose run started a hair before its slot does not run that slot twice', () => {
    const early = seen({
      gridAnchor: T0,
      lastPlanned: T0 + 10_000,
      lastStart: T0 + 9_999,
      lastEnd: T0 + 9_999,
    });
    expect(nextRunAt({ intervalMs: 10_000, sharp: true }, early)).toBe(T0 + 20_000);
  });

  test('after a retry off the grid, a sharp timer returns to its grid', () => {
    const retried = seen({
      gridAnchor: T0,
      lastPlanned: T0 + 13_000,
      lastStart: T0 + 13_000,
      lastEnd: T0 + 13_100,
    });
    expect(nextRunAt({ intervalMs: 10_000, sharp: true }, retried)).toBe(T0 + 20_000);
  });

  test('an idle timer waits until the object has been unchanged for the idle period', () => {
    expect(nextRunAt({ intervalMs: 10_000, idleMs: 30_000 }, seen())).toBe(T0 + 30_000);
    const changedLater = seen({
      lastStart: T0 + 30_000,
      lastEnd: T0 + 31_000,
      lastChange: T0 + 35_000,
    });
    expect(nextRunAt({ intervalMs: 10_000, idleMs: 30_000 }, changedLater)).toBe(T0 + 65_000);
  });

  test('an idle timer with an interval repeats every interval while the object stays unchanged', () => {
    const state = seen({ lastStart: T0 + 30_000, lastEnd: T0 + 31_000 });
    expect(nextRunAt({ intervalMs: 10_000, idleMs: 30_000 }, state)).toBe(T0 + 41_000);
  });

  test('an idle-only timer runs once per quiet period: not again until the object changes', () => {
    const ran = seen({ lastStart: T0 + 30_000, lastEnd: T0 + 30_500 });
    expect(nextRunAt({ idleMs: 30_000 }, ran)).toBeUndefined();
    expect(nextRunAt({ idleMs: 30_000 }, { ...ran, lastChange: T0 + 40_000 })).toBe(T0 + 70_000);
  });

  test('a timer with neither interval nor idle runs once', () => {
    expect(nextRunAt({}, seen())).toBe(T0);
    expect(nextRunAt({}, seen({ lastStart: T0, lastEnd: T0 + 1 }))).toBeUndefined();
  });

  test('a retry after a failure comes earlier than the next tick, never later', () => {
    const failed = seen({ lastStart: T0, lastEnd: T0 + 1_000 });
    expect(nextRunAt({ intervalMs: 60_000 }, { ...failed, retryAt: T0 + 6_000 })).toBe(T0 + 6_000);
    expect(nextRunAt({ intervalMs: 5_000 }, { ...failed, retryAt: T0 + 60_000 })).toBe(T0 + 6_000);
  });

  test('after a restart with a persisted schedule, the next run waits for the remaining interval', () => {
    // Previous process: ran at T0 (ended T0 + 1 s) on a 120 s interval; this process starts 60 s later.
    const restarted: TimerState = {
      firstSeen: T0 + 61_000,
      lastChange: T0,
      lastStart: T0,
      lastEnd: T0 + 1_000,
    };
    expect(nextRunAt({ intervalMs: 120_000, initialDelayMs: 10_000 }, restarted)).toBe(
      T0 + 121_000,
    );
  });
});
