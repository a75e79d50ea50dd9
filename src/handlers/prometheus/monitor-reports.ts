import { events, type KubeObject, type Logger } from 'konductor';
import { MAX_CONFIG_GZIP_BYTES, type LeftOutMonitor } from './config-budget.js';
import type { ReportedProblems } from './reported-problems.js';
import { monitorKey, podMonitorKey } from './selectors.js';
import type {
  PodMonitorResource,
  PrometheusResource,
  ServiceMonitorResource,
  SkippedMonitor,
} from './types.js';

type Monitor = (ServiceMonitorResource | PodMonitorResource) & KubeObject;

/** The monitors one render left out: invalid ones, and valid ones that did not fit the configuration. */
export interface MonitorOutcome {
  skipped: readonly SkippedMonitor[];
  leftOut: readonly LeftOutMonitor[];
}

/**
 * Posts one Warning Event on each monitor a render of `prometheus` left out, the first time that
 * render says so about that monitor generation (`reported` remembers): a Prometheus is rendered on
 * every monitor, rule or namespace change, and an unchanged monitor must not be reported again each
 * time. Invalid monitors get `InvalidConfiguration`, those left out for the Secret's size `ConfigTooLarge`.
 */
export function reportMonitors(
  prometheus: PrometheusResource,
  monitors: { services: readonly Monitor[]; pods: readonly Monitor[] },
  outcome: MonitorOutcome,
  reported: ReportedProblems,
  logger: Logger,
): void {
  const { namespace, name } = prometheus.metadata;
  const byKey = new Map<string, Monitor>();
  for (const monitor of monitors.services)
    byKey.set(monitorKey(monitor as ServiceMonitorResource), monitor);
  for (const monitor of monitors.pods)
    byKey.set(podMonitorKey(monitor as PodMonitorResource), monitor);
  const report = (key: string, reason: string, message: string): void => {
    const monitor = byKey.get(key);
    if (monitor === undefined || !reported.firstTime(monitor, message)) return;
    logger.warn({ monitor: key }, message);
    events.warn(monitor, reason, message);
  };
  for (const skipped of outcome.skipped) {
    report(
      skipped.monitor,
      'InvalidConfiguration',
      `skipped by Prometheus ${namespace}/${name}: ${skipped.problems.join('; ')}`,
    );
  }
  for (const { monitor, gzipBytes } of outcome.leftOut) {
    report(
      monitor,
      'ConfigTooLarge',
      `left out of Prometheus ${namespace}/${name}'s configuration: its jobs take about ${gzipBytes} gzipped bytes, and with them the configuration would be over the ${MAX_CONFIG_GZIP_BYTES} gzipped bytes its Secret can hold (the largest monitors are left out first): make it smaller, or have another Prometheus select it`,
    );
  }
}
