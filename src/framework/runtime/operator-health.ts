import type { Metrics } from '../observability/metrics.js';
import { PrometheusMetrics } from '../observability/prometheus-metrics.js';
import { stalledForMs, type ReactorProgress } from '../reactor/reactor.js';
import type { WatchHealth } from '../watching/watch-health.js';
import type { HealthCheck, HealthServerOptions } from './health-server.js';

/** What an operator's probes read: its watches, its reactor, its Lease and its routes. */
export interface OperatorHealthSources {
  watchHealth: WatchHealth;
  /** The reactor's queue and slots now. */
  progress(): ReactorProgress;
  /** Undefined without leader election. */
  leadership(): { holderKnown: boolean; leading: boolean } | undefined;
  /** Why some handlers cannot be served (empty when all can). */
  brokenRoutes(): readonly string[];
  /** Whether every initial listing has been delivered. */
  listed(): boolean;
  metrics: Metrics;
  /** A watch silent this long fails `/healthz`. */
  watchStallMs: number;
  /** Work waiting this long for a slot while no handler run finishes fails `/healthz`; 0 turns the check off. */
  handlerStallMs: number;
  /** Whether the operator abandons hung handler runs (`handlerTimeout`); the stall reason suggests it otherwise. */
  handlerTimeout: boolean;
  /** Readiness checks that come first (startup handlers, webhooks). */
  readinessFirst?: readonly HealthCheck[];
  /** The probe handlers' results, when there are any. */
  probes?: HealthServerOptions['probes'];
}

/** `/healthz`, `/readyz` and `/metrics` of an operator: the checks and the exposition, for a {@link HealthServer}. */
export function operatorHealth(
  sources: OperatorHealthSources,
  server: { port: number; host?: string },
): HealthServerOptions {
  const { watchHealth, metrics, watchStallMs, handlerStallMs } = sources;
  return {
    port: server.port,
    host: server.host,
    liveness: [
      {
        name: 'watches',
        check: () => {
          const stalled = watchHealth.stalled(watchStallMs);
          return stalled.length === 0
            ? { ok: true }
            : {
                ok: false,
                reason: `no answer from the API server for over ${watchStallMs / 1000} s on ${stalled.join(', ')}`,
              };
        },
      },
      {
        name: 'handlers',
        check: () => {
          if (!(handlerStallMs > 0)) return { ok: true };
          const progress = sources.progress();
          const stalledMs = stalledForMs(progress, Date.now());
          if (stalledMs < handlerStallMs) return { ok: true };
          const limit = sources.handlerTimeout
            ? ''
            : '; a handler timeout (option handlerTimeout, konductor --handler-timeout) abandons hung handlers';
          return {
            ok: false,
            reason: `no handler run has finished for ${Math.round(stalledMs / 1000)} s while ${progress.queued} object(s) wait and ${progress.running} run(s) hold every slot: handlers are hung${limit}`,
          };
        },
      },
    ],
    probes: sources.probes,
    readiness: [
      ...(sources.readinessFirst ?? []),
      {
        name: 'leadership',
        check: () => {
          const leadership = sources.leadership();
          if (!leadership) return { ok: true };
          return leadership.holderKnown
            ? { ok: true }
            : { ok: false, reason: 'the Lease has not been read yet' };
        },
      },
      {
        name: 'listings',
        check: () => {
          // A standby has nothing to list; it is ready to take over.
          if (sources.leadership()?.leading === false) return { ok: true };
          const broken = sources.brokenRoutes();
          if (broken.length > 0) return { ok: false, reason: broken.join('; ') };
          return sources.listed()
            ? { ok: true }
            : {
                ok: false,
                reason: `waiting for the initial listing of ${watchHealth.unsynced().join(', ') || 'resources not yet served'}`,
              };
        },
      },
    ],
    metrics: () =>
      metrics instanceof PrometheusMetrics
        ? metrics.text()
        : Promise.reject(new Error('this operator sends metrics to a custom sink')),
    metricsContentType:
      metrics instanceof PrometheusMetrics ? metrics.registry.contentType : undefined,
  };
}
