import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { CounterName, GaugeName, HistogramName, Labels, Metrics } from './metrics.js';

/** Label names of every metric, fixed up front as Prometheus requires; missing values export as "". */
const LABELS: Record<CounterName | GaugeName | HistogramName, readonly string[]> = {
  watch_events_total: ['resource', 'type'],
  watch_relists_total: ['resource'],
  watch_reconnects_total: ['resource'],
  watch_errors_total: ['resource'],
  watch_skipped_lines_total: ['resource'],
  reactor_runs_total: [],
  reactor_coalesced_events_total: [],
  handler_runs_total: ['handler', 'result'],
  events_dropped_total: ['reason'],
  reactor_queue_depth: [],
  reactor_objects: [],
  reactor_running: [],
  timer_lateness_seconds: ['timer'],
  handler_duration_seconds: ['handler'],
  api_requests_total: ['verb', 'code'],
  api_request_duration_seconds: ['verb'],
  reactor_queue_wait_seconds: [],
  reactor_objects_retrying: [],
  watch_lag_seconds: ['resource'],
  watch_last_activity_timestamp_seconds: ['resource'],
  leader: [],
  memory_limit_bytes: [],
  shard_ring_members: [],
  shard_objects: [],
  shard_moves_total: ['action'],
};

/** Help text of every `konductor_*` series the framework declares, by name without the prefix. */
export const METRIC_HELP: Readonly<Record<CounterName | GaugeName | HistogramName, string>> = {
  watch_events_total: 'Object events delivered by watches (ADDED, MODIFIED, DELETED).',
  watch_relists_total: 'Listings, initial and after 410 Gone.',
  watch_reconnects_total: 'Watch requests re-opened (server timeouts, errors, stalls).',
  watch_errors_total: 'List or watch requests that failed.',
  watch_skipped_lines_total: 'Malformed or unusable watch lines skipped.',
  reactor_runs_total: 'Per-object processing runs.',
  reactor_coalesced_events_total: 'Events folded into a pending run instead of causing their own.',
  handler_runs_total: 'Handler invocations by result (success, retry, failure).',
  events_dropped_total:
    'Kubernetes Events not written, by why: rate_limited (per object), queue_full, stopped (the stop deadline came first).',
  reactor_queue_depth: 'Runs waiting for a free slot.',
  reactor_objects: 'Objects with work queued or running.',
  reactor_running: 'Runs in progress.',
  timer_lateness_seconds: 'Actual minus planned start of timer runs.',
  handler_duration_seconds: 'How long handler invocations took.',
  api_requests_total:
    'Requests to the API server by verb (get, list, watch, create, update, patch, delete, deletecollection) and HTTP status code ("error" when no answer came).',
  api_request_duration_seconds:
    'Time to a full answer from the API server, by verb (watches: to the open stream).',
  reactor_queue_wait_seconds: 'Time from an object being queued to its run starting.',
  reactor_objects_retrying: 'Objects whose last run failed and that wait for their retry.',
  watch_lag_seconds:
    'Delivery of a watched change minus its write on the API server (the newest managedFields time; 1 s resolution).',
  watch_last_activity_timestamp_seconds:
    'Unix time of the last event, bookmark, listing or (re)connection of a watch.',
  leader:
    '1 while this replica does the work (it holds the Lease, or leader election is off); 0 while it stands by.',
  memory_limit_bytes: "The process's cgroup memory limit (set only when there is one).",
  shard_ring_members:
    'Live members of the sharding ring, as this replica sees them (set only with sharding on).',
  shard_objects:
    "Objects in this replica's shard: those its watches hold (set only with sharding on).",
  shard_moves_total:
    "Objects the coordinating replica placed, by action: assign (a new object or a departed member's), drain (asked its member to hand it on).",
};
const PREFIX = 'konductor_';

/**
 * The framework's metrics as Prometheus series (`konductor_*`) in a prom-client registry, plus the
 * process's default metrics (CPU, memory, event-loop lag), ready to serve on `/metrics`.
 */
export class PrometheusMetrics implements Metrics {
  readonly registry: Registry;
  private readonly counters = new Map<string, Counter>();
  private readonly gauges = new Map<string, Gauge>();
  private readonly histograms = new Map<string, Histogram>();

  constructor(registry: Registry = new Registry()) {
    this.registry = registry;
    collectDefaultMetrics({ register: registry, prefix: PREFIX });
    const limit = memoryLimitBytes();
    if (limit !== undefined) this.set('memory_limit_bytes', limit);
  }

  increment(name: CounterName, labels?: Labels, by = 1): void {
    let counter = this.counters.get(name);
    if (!counter) {
      counter = new Counter({
        name: PREFIX + name,
        help: METRIC_HELP[name],
        labelNames: LABELS[name],
        registers: [this.registry],
      });
      this.counters.set(name, counter);
    }
    counter.inc(this.labelsFor(name, labels), by);
  }

  set(name: GaugeName, value: number, labels?: Labels): void {
    let gauge = this.gauges.get(name);
    if (!gauge) {
      gauge = new Gauge({
        name: PREFIX + name,
        help: METRIC_HELP[name],
        labelNames: LABELS[name],
        registers: [this.registry],
      });
      this.gauges.set(name, gauge);
    }
    gauge.set(this.labelsFor(name, labels), value);
  }

  remove(name: GaugeName, labels?: Labels): void {
    this.gauges.get(name)?.remove(this.labelsFor(name, labels));
  }

  observe(name: HistogramName, value: number, labels?: Labels): void {
    let histogram = this.histograms.get(name);
    if (!histogram) {
      histogram = new Histogram({
        name: PREFIX + name,
        help: METRIC_HELP[name],
        labelNames: LABELS[name],
        buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
        registers: [this.registry],
      });
      this.histograms.set(name, histogram);
    }
    histogram.observe(this.labelsFor(name, labels), value);
  }

  /** The exposition text for `/metrics`. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  private labelsFor(
    name: CounterName | GaugeName | HistogramName,
    labels: Labels | undefined,
  ): Record<string, string> {
    const result: Record<string, string> = {};
    for (const label of LABELS[name]) result[label] = labels?.[label] ?? '';
    return result;
  }
}

/** The cgroup memory limit, or undefined when the process has none (Node reports 0 or about 2^63 then). */
function memoryLimitBytes(): number | undefined {
  const limit = process.constrainedMemory?.() ?? 0;
  return limit > 0 && limit < 2 ** 60 ? limit : undefined;
}
