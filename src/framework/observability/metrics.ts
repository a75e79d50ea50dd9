/** Label values of one metric sample. */
export type Labels = Readonly<Record<string, string>>;

/** Counters the framework increments. */
export type CounterName =
  | 'watch_events_total'
  | 'watch_relists_total'
  | 'watch_reconnects_total'
  | 'watch_errors_total'
  | 'watch_skipped_lines_total'
  | 'reactor_runs_total'
  | 'reactor_coalesced_events_total';

/** Distributions the framework observes. */
export type HistogramName = 'timer_lateness_seconds' | 'handler_duration_seconds';

/** Gauges the framework sets. */
export type GaugeName = 'reactor_queue_depth' | 'reactor_objects' | 'reactor_running';

/**
 * Where the framework reports what it does. The runtime exposes these on `/metrics`;
 * tests and benchmarks read them from a {@link MetricsRecorder}.
 */
export interface Metrics {
  increment(name: CounterName, labels?: Labels, by?: number): void;
  set(name: GaugeName, value: number, labels?: Labels): void;
  /** Records one sample of a distribution. Optional: sinks that don't need it may leave it out. */
  observe?(name: HistogramName, value: number, labels?: Labels): void;
}

/** Discards everything. */
export const noMetrics: Metrics = { increment: () => undefined, set: () => undefined };

function key(name: string, labels: Labels | undefined): string {
  if (!labels) return name;
  const parts = Object.keys(labels).sort().map((k) => `${k}=${labels[k]}`);
  return parts.length ? `${name}{${parts.join(',')}}` : name;
}

/** Keeps metrics in memory, keyed as `name{label=value,...}`. */
export class MetricsRecorder implements Metrics {
  readonly counters = new Map<string, number>();
  readonly gauges = new Map<string, number>();
  /** Samples per histogram name (all label sets together), newest last, at most `maxSamples` each. */
  readonly samples = new Map<HistogramName, number[]>();

  constructor(private readonly maxSamples = 100_000) {}

  observe(name: HistogramName, value: number): void {
    const list = this.samples.get(name) ?? [];
    if (list.length >= this.maxSamples) list.shift();
    list.push(value);
    this.samples.set(name, list);
  }

  increment(name: CounterName, labels?: Labels, by = 1): void {
    const k = key(name, labels);
    this.counters.set(k, (this.counters.get(k) ?? 0) + by);
  }

  set(name: GaugeName, value: number, labels?: Labels): void {
    this.gauges.set(key(name, labels), value);
  }

  /** Sum of a counter over all label sets, or one label set when given. */
  counter(name: CounterName, labels?: Labels): number {
    if (labels) return this.counters.get(key(name, labels)) ?? 0;
    let sum = 0;
    for (const [k, v] of this.counters) if (k === name || k.startsWith(`${name}{`)) sum += v;
    return sum;
  }
}
