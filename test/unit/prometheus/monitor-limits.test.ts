/** Size limits on ServiceMonitors and PodMonitors: the same at admission and at render. */
import {
  podMonitorAdmissionProblems,
  serviceMonitorAdmissionProblems,
} from '../../../src/handlers/prometheus/admission.js';
import { generateConfig } from '../../../src/handlers/prometheus/config.js';
import {
  MAX_MONITOR_SPEC_BYTES,
  MAX_MONITOR_STRING,
} from '../../../src/handlers/prometheus/monitor-limits.js';
import type {
  PodMonitorResource,
  PrometheusResource,
  ServiceMonitorResource,
} from '../../../src/handlers/prometheus/types.js';

function serviceMonitor(
  endpoint: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): ServiceMonitorResource {
  return {
    metadata: { namespace: 'team-a', name: 'app' },
    spec: { selector: {}, endpoints: [{ port: 'metrics', ...endpoint }], ...extra },
  } as unknown as ServiceMonitorResource;
}

const long = 'x'.repeat(MAX_MONITOR_STRING + 1);
const prometheus: PrometheusResource = {
  metadata: { namespace: 'monitoring', name: 'main' },
  spec: { serviceMonitorSelector: {}, serviceMonitorNamespaceSelector: {} },
};

describe('monitor size limits', () => {
  test.each([
    [
      'a relabeling replacement',
      { relabelings: [{ targetLabel: 'a', replacement: long }] },
      'spec.endpoints[0].relabelings[0].replacement',
    ],
    [
      'a relabeling separator',
      { relabelings: [{ sourceLabels: ['a'], targetLabel: 'a', separator: long }] },
      'spec.endpoints[0].relabelings[0].separator',
    ],
    ['a path', { path: long }, 'spec.endpoints[0].path'],
    [
      'a target label template',
      { relabelings: [{ targetLabel: `\${1}${long}` }] },
      'spec.endpoints[0].relabelings[0].targetLabel',
    ],
  ])(
    `%s longer than ${MAX_MONITOR_STRING} characters is refused at admission, naming the field`,
    (_what, endpoint, field) => {
      expect(serviceMonitorAdmissionProblems(serviceMonitor(endpoint))).toEqual([
        `${field}: longer than the ${MAX_MONITOR_STRING} characters accepted`,
      ]);
    },
  );

  test(`a spec over ${MAX_MONITOR_SPEC_BYTES} bytes is refused whole, whatever its strings`, () => {
    const relabelings = Array.from({ length: 200 }, () => ({
      targetLabel: 'a',
      replacement: 'y'.repeat(1000),
    }));
    expect(serviceMonitorAdmissionProblems(serviceMonitor({ relabelings }))).toEqual([
      expect.stringMatching(
        new RegExp(
          `^spec: \\d+ bytes serialized, more than the ${MAX_MONITOR_SPEC_BYTES} accepted`,
        ),
      ),
    ]);
  });

  test('a PodMonitor gets the same limits', () => {
    const monitor = {
      metadata: { namespace: 'team-a', name: 'app' },
      spec: { selector: {}, podMetricsEndpoints: [{ port: 'm', path: long }] },
    } as unknown as PodMonitorResource;
    expect(podMonitorAdmissionProblems(monitor)).toEqual([
      `spec.podMetricsEndpoints[0].path: longer than the ${MAX_MONITOR_STRING} characters accepted`,
    ]);
  });

  test('at render the same monitor is skipped with the same problem', () => {
    const { skipped, config } = generateConfig(
      prometheus,
      [serviceMonitor({ path: long })],
      [{ name: 'team-a' }],
    );
    expect(skipped).toEqual([
      {
        monitor: 'team-a/app',
        problems: [
          `spec.endpoints[0].path: longer than the ${MAX_MONITOR_STRING} characters accepted`,
        ],
      },
    ]);
    expect(config.scrape_configs).toEqual([]);
  });
});
