import { Histogram, MetricsRecorder } from '../../../src/framework/observability/metrics.js';

describe('metrics', () => {
  test('histogram quantiles are exact to the millisecond', () => {
    const histogram = new Histogram();
    for (let ms = 1; ms <= 100; ms++) histogram.add(ms / 1000);
    expect(histogram.quantile(0.5)).toBe(0.05);
    expect(histogram.quantile(0.99)).toBe(0.099);
    expect(histogram.quantile(1)).toBe(0.1);
    expect(histogram.count).toBe(100);
  });

  test('a snapshot measures a window: quantiles of only the samples added since', () => {
    const histogram = new Histogram();
    for (let i = 0; i < 1_000; i++) histogram.add(0.5);
    const before = histogram.snapshot();
    for (let i = 0; i < 10; i++) histogram.add(0.002);
    expect(histogram.quantile(0.99, before)).toBe(0.002);
  });

  test('a recorder keeps memory bounded however many samples it observes', () => {
    const recorder = new MetricsRecorder();
    for (let i = 0; i < 200_000; i++) recorder.observe('timer_lateness_seconds', (i % 7) / 1000);
    const histogram = recorder.histograms.get('timer_lateness_seconds')!;
    expect(histogram.count).toBe(200_000);
    expect(histogram.counts.length).toBe(60_000);
  });

  test('counters sum over label sets, or read one label set', () => {
    const recorder = new MetricsRecorder();
    recorder.increment('watch_events_total', { resource: 'a', type: 'ADDED' });
    recorder.increment('watch_events_total', { type: 'ADDED', resource: 'a' }, 2);
    recorder.increment('watch_events_total', { resource: 'b', type: 'ADDED' });
    expect(recorder.counter('watch_events_total')).toBe(4);
    expect(recorder.counter('watch_events_total', { resource: 'a', type: 'ADDED' })).toBe(3);
  });
});
