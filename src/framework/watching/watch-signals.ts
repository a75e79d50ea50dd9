import type { Labels, Metrics } from '../observability/metrics.js';
import type { KubeObject } from '../objects/kube-object.js';

/**
 * A watch's liveness and lag as metrics: `watch_last_activity_timestamp_seconds` (any answer from
 * the server, set at most once a second) and `watch_lag_seconds` (a change's delivery minus its write).
 */
export class WatchSignals {
  private lastSecond = 0;
  private closed = false;

  constructor(
    private readonly metrics: Metrics,
    private readonly labels: Labels,
  ) {
    const key = labels.resource ?? '';
    const open = watchesOf(metrics);
    open.set(key, (open.get(key) ?? 0) + 1);
  }

  /** The watch stopped for good: the last one of its resource takes the activity series along. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const key = this.labels.resource ?? '';
    const open = watchesOf(this.metrics);
    const left = (open.get(key) ?? 1) - 1;
    if (left > 0) open.set(key, left);
    else {
      open.delete(key);
      this.metrics.remove?.('watch_last_activity_timestamp_seconds', this.labels);
    }
  }

  /** The server answered something (a listing page, a line, a bookmark, an opened watch). */
  contact(nowMs: number): void {
    const second = Math.floor(nowMs / 1000);
    if (second === this.lastSecond) return;
    this.lastSecond = second;
    this.metrics.set('watch_last_activity_timestamp_seconds', second, this.labels);
  }

  /** A live change arrived: how long after the API server wrote it (read before managedFields are dropped). */
  delivered(object: KubeObject, nowMs: number): void {
    const written = lastWriteMs(object);
    if (written !== undefined)
      this.metrics.observe?.('watch_lag_seconds', Math.max(0, nowMs - written) / 1000, this.labels);
  }
}

/** Open watches per resource label, per metrics sink: watches of several namespaces share one series. */
const openWatches = new WeakMap<Metrics, Map<string, number>>();

function watchesOf(metrics: Metrics): Map<string, number> {
  let open = openWatches.get(metrics);
  if (!open) openWatches.set(metrics, (open = new Map()));
  return open;
}

/**
 * The newest `metadata.managedFields[].time`: the API server stamps the entry of every manager whose
 * fields a write changed, to the second. Undefined when there is none (or it is not a time).
 */
export function lastWriteMs(object: KubeObject): number | undefined {
  const entries: unknown = object.metadata?.managedFields;
  if (!Array.isArray(entries)) return undefined;
  let newest: number | undefined;
  for (const entry of entries as unknown[]) {
    const time = (entry as { time?: unknown } | null)?.time;
    if (typeof time !== 'string') continue;
    const ms = Date.parse(time);
    if (Number.isFinite(ms) && (newest === undefined || ms > newest)) newest = ms;
  }
  return newest;
}
