/**
 * ServiceMonitor jobs as upstream's `generateServiceMonitorConfig` writes them,
 * for the fields users bring from prometheus-operator (the golden files show whole jobs; these
 * specs name one behaviour each).
 */
import { generateConfig, validateServiceMonitor } from '../../../src/handlers/prometheus/config.js';
import { parseVersion } from '../../../src/handlers/prometheus/prometheus-version.js';
import type {
  Endpoint,
  PrometheusResource,
  PrometheusSpec,
  ScrapeConfig,
  ServiceMonitorResource,
  ServiceMonitorSpec,
} from '../../../src/handlers/prometheus/types.js';

function prometheus(spec: PrometheusSpec = {}): PrometheusResource {
  return {
    metadata: { namespace: 'monitoring', name: 'main' },
    spec: { serviceMonitorSelector: {}, ...spec },
  };
}

function monitor(
  name: string,
  endpoints: Endpoint[],
  extra: Partial<ServiceMonitorSpec> = {},
): ServiceMonitorResource {
  return {
    metadata: { namespace: 'monitoring', name },
    spec: { selector: { matchLabels: { app: name } }, endpoints, ...extra },
  };
}

const namespaces = [{ name: 'monitoring' }];

/** The jobs rendered for `monitors` under `spec`, by job name. */
function jobs(
  spec: PrometheusSpec,
  ...monitors: ServiceMonitorResource[]
): Record<string, ScrapeConfig> {
  const result = generateConfig(prometheus(spec), monitors, namespaces);
  expect(result.skipped).toEqual([]);
  return Object.fromEntries(result.config.scrape_configs.map((job) => [job.job_name, job]));
}

function sourceLabels(job: ScrapeConfig | undefined): string[] {
  return (job?.relabel_configs ?? []).flatMap((rule) => rule.source_labels ?? []);
}

describe('an endpoint naming no port', () => {
  it('scrapes every port of the selected Services: no port filter and no endpoint label', () => {
    const job = jobs({}, monitor('web', [{ path: '/metrics' }]))['serviceMonitor/monitoring/web/0'];
    expect(sourceLabels(job)).not.toContain('__meta_kubernetes_endpoint_port_name');
    expect(sourceLabels(job)).not.toContain('__meta_kubernetes_pod_container_port_name');
    expect(sourceLabels(job)).not.toContain('__meta_kubernetes_pod_container_port_number');
    expect(job?.relabel_configs.filter((rule) => rule.target_label === 'endpoint')).toEqual([]);
    expect(job?.metrics_path).toBe('/metrics');
  });

  it("does not keep the monitor's other endpoints out any more", () => {
    const rendered = jobs({}, monitor('web', [{ path: '/metrics' }, { port: 'admin' }]));
    expect(Object.keys(rendered)).toEqual([
      'serviceMonitor/monitoring/web/0',
      'serviceMonitor/monitoring/web/1',
    ]);
    expect(rendered['serviceMonitor/monitoring/web/1']?.relabel_configs).toContainEqual({
      target_label: 'endpoint',
      replacement: 'admin',
    });
  });
});

describe('honor_labels and honor_timestamps', () => {
  it('writes honor_timestamps only when the endpoint sets it', () => {
    const rendered = jobs(
      {},
      monitor('web', [
        { port: 'a', honorTimestamps: true },
        { port: 'b', honorTimestamps: false },
        { port: 'c' },
      ]),
    );
    expect(Object.values(rendered).map((job) => job.honor_timestamps)).toEqual([
      true,
      false,
      undefined,
    ]);
  });

  it('overrideHonorLabels forces honor_labels to false, whatever the endpoint says', () => {
    const rendered = jobs(
      { overrideHonorLabels: true },
      monitor('web', [{ port: 'a', honorLabels: true }]),
    );
    expect(rendered['serviceMonitor/monitoring/web/0']?.honor_labels).toBe(false);
  });

  it('overrideHonorTimestamps forces honor_timestamps: false onto every job, also where the endpoint is silent', () => {
    const rendered = jobs(
      { overrideHonorTimestamps: true },
      monitor('web', [{ port: 'a', honorTimestamps: true }, { port: 'b' }]),
    );
    expect(Object.values(rendered).map((job) => job.honor_timestamps)).toEqual([false, false]);
  });

  it('without the overrides, honorLabels: true is kept', () => {
    expect(
      jobs({}, monitor('web', [{ port: 'a', honorLabels: true }]))[
        'serviceMonitor/monitoring/web/0'
      ]?.honor_labels,
    ).toBe(true);
  });
});

describe('serviceDiscoveryRole', () => {
  it('EndpointSlice on the Prometheus: role endpointslice and the endpointslice meta labels', () => {
    const job = jobs(
      { serviceDiscoveryRole: 'EndpointSlice' },
      monitor('web', [{ port: 'metrics' }]),
    )['serviceMonitor/monitoring/web/0'];
    expect(job?.kubernetes_sd_configs).toEqual([
      { role: 'endpointslice', namespaces: { names: ['monitoring'] } },
    ]);
    expect(job?.relabel_configs).toContainEqual({
      action: 'keep',
      source_labels: ['__meta_kubernetes_endpointslice_port_name'],
      regex: 'metrics',
    });
    expect(sourceLabels(job)).toContain('__meta_kubernetes_endpointslice_address_target_kind');
    expect(
      sourceLabels(job).filter((label) => label.startsWith('__meta_kubernetes_endpoint_')),
    ).toEqual([]);
  });

  it("the ServiceMonitor's own role wins over the Prometheus default, either way", () => {
    const toSlices = monitor('sliced', [{ port: 'metrics' }], {
      serviceDiscoveryRole: 'EndpointSlice',
    });
    const toEndpoints = monitor('classic', [{ port: 'metrics' }], {
      serviceDiscoveryRole: 'Endpoints',
    });
    expect(
      jobs({}, toSlices)['serviceMonitor/monitoring/sliced/0']?.kubernetes_sd_configs[0]?.role,
    ).toBe('endpointslice');
    expect(
      jobs({ serviceDiscoveryRole: 'EndpointSlice' }, toEndpoints)[
        'serviceMonitor/monitoring/classic/0'
      ]?.kubernetes_sd_configs[0]?.role,
    ).toBe('endpoints');
  });

  it('falls back to endpoints for a Prometheus older than 2.21, which has no EndpointSlice discovery', () => {
    const job = jobs(
      { serviceDiscoveryRole: 'EndpointSlice', version: 'v2.20.1' },
      monitor('web', [{ port: 'metrics' }]),
    )['serviceMonitor/monitoring/web/0'];
    expect(job?.kubernetes_sd_configs[0]?.role).toBe('endpoints');
    expect(sourceLabels(job)).toContain('__meta_kubernetes_endpoint_port_name');
  });

  it('an unknown role skips the monitor, naming the field', () => {
    const bad = monitor('web', [{ port: 'metrics' }], {
      serviceDiscoveryRole: 'Pods' as 'Endpoints',
    });
    expect(generateConfig(prometheus(), [bad], namespaces).skipped).toEqual([
      {
        monitor: 'monitoring/web',
        problems: ['spec.serviceDiscoveryRole: "Pods" must be Endpoints or EndpointSlice'],
      },
    ]);
  });

  it('an unknown role on the Prometheus refuses the Prometheus', () => {
    expect(() =>
      generateConfig(prometheus({ serviceDiscoveryRole: 'Nodes' as 'Endpoints' }), [], namespaces),
    ).toThrow(/spec\.serviceDiscoveryRole: "Nodes" must be Endpoints or EndpointSlice/);
  });
});

describe('selectorMechanism: RoleSelector', () => {
  const selector = {
    matchLabels: { app: 'web' },
    matchExpressions: [{ key: 'env', operator: 'In' as const, values: ['prod', 'dev'] }],
  };

  it("puts the Service selector into the SD config, for the endpoint role and service, in apimachinery's text form", () => {
    const job = jobs(
      {},
      monitor('web', [{ port: 'metrics' }], { selector, selectorMechanism: 'RoleSelector' }),
    )['serviceMonitor/monitoring/web/0'];
    expect(job?.kubernetes_sd_configs).toEqual([
      {
        role: 'endpoints',
        namespaces: { names: ['monitoring'] },
        selectors: [
          { role: 'endpoints', label: 'app=web,env in (dev,prod)' },
          { role: 'service', label: 'app=web,env in (dev,prod)' },
        ],
      },
    ]);
  });

  it('writes no selector relabelings then', () => {
    const job = jobs(
      {},
      monitor('web', [{ port: 'metrics' }], { selector, selectorMechanism: 'RoleSelector' }),
    )['serviceMonitor/monitoring/web/0'];
    expect(
      sourceLabels(job).filter((label) => label.startsWith('__meta_kubernetes_service_label')),
    ).toEqual([]);
  });

  it('RelabelConfig (the default) keeps the keep/drop relabelings and no selectors', () => {
    const job = jobs(
      {},
      monitor('web', [{ port: 'metrics' }], { selector, selectorMechanism: 'RelabelConfig' }),
    )['serviceMonitor/monitoring/web/0'];
    expect(job?.kubernetes_sd_configs[0]?.selectors).toBeUndefined();
    expect(sourceLabels(job)).toContain('__meta_kubernetes_service_label_env');
  });

  it('is refused below Prometheus 2.17, which has no role selectors', () => {
    const old = monitor('web', [{ port: 'metrics' }], { selectorMechanism: 'RoleSelector' });
    expect(validateServiceMonitor(old, '30s', parseVersion('2.16.0'))).toEqual([
      'spec.selectorMechanism: RoleSelector needs Prometheus 2.17.0 or later',
    ]);
    expect(generateConfig(prometheus({ version: 'v2.16.0' }), [old], namespaces).skipped).toEqual([
      {
        monitor: 'monitoring/web',
        problems: ['spec.selectorMechanism: RoleSelector needs Prometheus 2.17.0 or later'],
      },
    ]);
  });

  it('an unknown mechanism skips the monitor, naming the field', () => {
    const bad = monitor('web', [{ port: 'metrics' }], {
      selectorMechanism: 'Magic' as 'RoleSelector',
    });
    expect(validateServiceMonitor(bad)).toEqual([
      'spec.selectorMechanism: "Magic" must be RelabelConfig or RoleSelector',
    ]);
  });
});
