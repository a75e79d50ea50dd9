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
  | 'reactor_coalesced_events_total'
  | 'handler_runs_total'
  | 'events_dropped_total'
  | 'api_requests_total'
  | 'shard_moves_total';

/** Distributions the framework observes. */
export type HistogramName =
  | 'timer_lateness_seconds'
  | 'handler_duration_seconds'
  | 'reactor_queue_wait_seconds'
  | 'api_request_duration_seconds'
  | 'watch_lag_seconds';

/** Gauges the framework sets. */
export type GaugeName =
  | 'reactor_queue_depth'
  | 'reactor_objects'
  | 'reactor_running'
  | 'reactor_objects_retrying'
  | 'watch_last_activity_timestamp_seconds'
  | 'leader'
  | 'memory_limit_bytes'
  | 'shard_ring_members'
  | 'shard_objects';

/**
 * Where the framework reports what it does. The runtime exposes these on `/metrics`;
 * tests and benchmarks read them from an in-memory recorder.
 */
export interface Metrics {
  /** Adds `by` (default 1) to a counter. */
  increment(name: CounterName, labels?: Labels, by?: number): void;
  /** Sets a gauge to `value`. */
  set(name: GaugeName, value: number, labels?: Labels): void;
  /** Records one sample of a distribution. Optional: sinks that don't need it may leave it out. */
  observe?(name: HistogramName, value: number, labels?: Labels): void;
  /** Drops a gauge's series (its subject is gone, and a last value would read as stale). Optional. */
  remove?(name: GaugeName, labels?: Labels): void;
}

/** Discards everything. */
export const noMetrics: Metrics = { increment: () => undefined, set: () => undefined };

/** Keys of frozen label objects, which callers on hot paths make once and pass every time. */
const frozenKeys = new WeakMap<Labels, Map<string, string>>();

function key(name: string, labels: Labels | undefined): string {
  if (!labels) return name;
  if (!Object.isFrozen(labels)) return labelKey(name, labels);
  let byName = frozenKeys.get(labels);
  if (!byName) frozenKeys.set(labels, (byName = new Map()));
  let known = byName.get(name);
  if (known === undefined) byName.set(name, (known = labelKey(name, labels)));
  return known;
}

function labelKey(name: string, labels: Labels): string {
  const parts = Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`);
  return parts.length ? `${name}{${parts.join(',')}}` : name;
}

const BUCKETS = 60_000; // 1 ms each, up to 60 s; slower samples land in the last bucket

/** Counts of samples (in seconds) by millisecond: O(1) per sample, bounded memory, quantiles exact to 1 ms. */
export class Histogram {
  readonly counts = new Uint32Array(BUCKETS);
  count = 0;
  sum = 0;

  add(seconds: number): void {
    const bucket = Math.min(BUCKETS - 1, Math.max(0, Math.floor(seconds * 1000)));
    this.counts[bucket] = (this.counts[bucket] ?? 0) + 1;
    this.count += 1;
    this.sum += seconds;
  }

  /** A copy, to measure a window: `later.quantile(0.99, earlier)`. */
  snapshot(): Histogram {
    const copy = new Histogram();
    copy.counts.set(this.counts);
    copy.count = this.count;
    copy.sum = this.sum;
    return copy;
  }

  /** The q-quantile in seconds (lower edge of its 1 ms bucket), of all samples or of those since `since`. */
  quantile(q: number, since?: Histogram): number {
    const total = this.count - (since?.count ?? 0);
    if (total <= 0) return 0;
    const rank = Math.max(1, Math.ceil(q * total));
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += (this.counts[i] ?? 0) - (since?.counts[i] ?? 0);
      if (seen >= rank) return i / 1000;
    }
    return (BUCKETS - 1) / 1000;
  }
}

/** Keeps metrics in memory, keyed as `name{label=value,...}`. */
export class MetricsRecorder implements Metrics {
  readonly counters = new Map<string, number>();
  readonly gauges = new Map<string, number>();
  /** One distribution per histogram name (all label sets together). */
  readonly histograms = new Map<HistogramName, Histogram>();

  observe(name: HistogramName, value: number): void {
    let histogram = this.histograms.get(name);
    if (!histogram) {
      histogram = new Histogram();
      this.histograms.set(name, histogram);
    }
    histogram.add(value);
  }

  increment(name: CounterName, labels?: Labels, by = 1): void {
    const k = key(name, labels);
    this.counters.set(k, (this.counters.get(k) ?? 0) + by);
  }

  set(name: GaugeName, value: number, labels?: Labels): void {
    this.gauges.set(key(name, labels), value);
  }

  remove(name: GaugeName, labels?: Labels): void {
    this.gauges.delete(key(name, labels));
  }

  /** Sum of a counter over all label sets, or one label set when given. */
  counter(name: CounterName, labels?: Labels): number {
    if (labels) return this.counters.get(key(name, labels)) ?? 0;
    let sum = 0;
    for (const [k, v] of this.counters) if (k === name || k.startsWith(`${name}{`)) sum += v;
    return sum;
  }
}
