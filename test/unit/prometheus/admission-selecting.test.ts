/**
 * Admission and render agree: a monitor that a known Prometheus selecting it would skip at render
 * is refused at admission, naming that Prometheus; one no known Prometheus selects is checked only
 * against what every Prometheus refuses.
 */
import {
  podMonitorAdmissionProblems,
  serviceMonitorAdmissionProblems,
  type KnownPrometheuses,
} from '../../../src/handlers/prometheus/admission.js';
import { generateConfig } from '../../../src/handlers/prometheus/config.js';
import type {
  PodMonitorResource,
  PrometheusResource,
  ServiceMonitorResource,
} from '../../../src/handlers/prometheus/types.js';

function serviceMonitor(
  endpoint: Record<string, unknown>,
  labels: Record<string, string> = { team: 'shop' },
): ServiceMonitorResource {
  return {
    metadata: { namespace: 'shop', name: 'app', labels },
    spec: { selector: {}, endpoints: [{ port: 'metrics', ...endpoint }] },
  } as unknown as ServiceMonitorResource;
}

function prometheus(name: string, spec: Record<string, unknown>): PrometheusResource {
  return {
    metadata: { namespace: 'monitoring', name },
    spec: {
      serviceMonitorSelector: { matchLabels: { team: 'shop' } },
      serviceMonitorNamespaceSelector: {},
      podMonitorSelector: {},
      podMonitorNamespaceSelector: {},
      ...spec,
    },
  };
}

const namespaces = [{ name: 'shop' }, { name: 'monitoring' }];
const known = (...prometheuses: PrometheusResource[]): KnownPrometheuses => ({
  prometheuses,
  namespaces,
});

describe('admission against the Prometheus objects that select a monitor', () => {
  test("a scrapeTimeout above the selecting Prometheus's interval is refused, naming it, as render would skip it", () => {
    const monitor = serviceMonitor({ scrapeTimeout: '1m' });
    const main = prometheus('main', { scrapeInterval: '30s' });
    expect(serviceMonitorAdmissionProblems(monitor, known(main))).toEqual([
      'Prometheus monitoring/main, which selects it, would skip it: spec.endpoints[0].scrapeTimeout: 1m is greater than the scrape interval 30s',
    ]);
    expect(generateConfig(main, [monitor], namespaces).skipped).toHaveLength(1);
  });

  test('the same monitor passes when every Prometheus selecting it scrapes less often', () => {
    expect(
      serviceMonitorAdmissionProblems(
        serviceMonitor({ scrapeTimeout: '1m' }),
        known(prometheus('slow', { scrapeInterval: '2m' })),
      ),
    ).toEqual([]);
  });

  test('a Prometheus that does not select the monitor is not asked', () => {
    const other = prometheus('other', { scrapeInterval: '30s' });
    expect(
      serviceMonitorAdmissionProblems(
        serviceMonitor({ scrapeTimeout: '1m' }, { team: 'search' }),
        known(other),
      ),
    ).toEqual([]);
  });

  test('a PodMonitor is checked the same way', () => {
    const monitor = {
      metadata: { namespace: 'shop', name: 'pods' },
      spec: { selector: {}, podMetricsEndpoints: [{ port: 'm', scrapeTimeout: '1m' }] },
    } as unknown as PodMonitorResource;
    expect(podMonitorAdmissionProblems(monitor, known(prometheus('main', {})))).toEqual([
      'Prometheus monitoring/main, which selects it, would skip it: spec.podMetricsEndpoints[0].scrapeTimeout: 1m is greater than the scrape interval 30s',
    ]);
  });
});
