import { jest } from '@jest/globals';
import { MetricsRecorder } from '../../../src/framework/observability/metrics.js';
import { lastWriteMs, WatchSignals } from '../../../src/framework/watching/watch-signals.js';

const labels = Object.freeze({ resource: 'widgets.example.com' });
const at = (time: string) => ({ manager: 'm', operation: 'Update', time });

describe('a watch as metrics', () => {
  test('the last write is the newest managedFields time', () => {
    const object = {
      metadata: {
        managedFields: [at('2024-05-01T12:00:00Z'), at('2024-05-01T12:00:07Z'), at('not a time')],
      },
    };
    expect(lastWriteMs(object)).toBe(Date.parse('2024-05-01T12:00:07Z'));
    expect(lastWriteMs({ metadata: {} })).toBeUndefined();
  });

  test('watch_lag_seconds is delivery minus the last write, never negative', () => {
    const metrics = new MetricsRecorder();
    const signals = new WatchSignals(metrics, labels);
    const written = Date.parse('2024-05-01T12:00:00Z');
    signals.delivered(
      { metadata: { managedFields: [at('2024-05-01T12:00:00Z')] } },
      written + 3_000,
    );
    signals.delivered({ metadata: { managedFields: [at('2024-05-01T12:00:09Z')] } }, written); // skewed clocks
    const lag = metrics.histograms.get('watch_lag_seconds');
    expect(lag?.count).toBe(2);
    expect(lag?.quantile(1)).toBe(3);
    expect(lag?.quantile(0)).toBe(0);
  });

  test('watch_last_activity_timestamp_seconds is set in whole seconds, at most once a second', () => {
    const metrics = new MetricsRecorder();
    const set = jest.spyOn(metrics, 'set');
    const signals = new WatchSignals(metrics, labels);
    signals.contact(1_000_000_100);
    signals.contact(1_000_000_900);
    signals.contact(1_000_001_000);
    expect(set.mock.calls).toEqual([
      ['watch_last_activity_timestamp_seconds', 1_000_000, labels],
      ['watch_last_activity_timestamp_seconds', 1_000_001, labels],
    ]);
  });
});

describe('a stopped watch', () => {
  test('the last watch of a resource to stop removes its activity series; one still open keeps it', () => {
    const metrics = new MetricsRecorder();
    const first = new WatchSignals(metrics, labels);
    const second = new WatchSignals(metrics, labels);
    first.contact(1_000_000_000);
    const series = 'watch_last_activity_timestamp_seconds{resource=widgets.example.com}';

    first.close();
    expect(metrics.gauges.has(series)).toBe(true);
    second.close();
    second.close();
    expect(metrics.gauges.has(series)).toBe(false);
  });
});
