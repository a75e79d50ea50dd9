/**
 * PodMonitors become `role: pod` jobs as upstream's `generatePodMonitorConfig`
 * writes them, selected like ServiceMonitors, and a bad one never breaks the others.
 */
import { generateConfig, validatePodMonitor } from '../../../src/handlers/prometheus/config.js';
import type {
  NamespaceInfo,
  PodMetricsEndpoint,
  PodMonitorResource,
  PodMonitorSpec,
  PrometheusResource,
  PrometheusSpec,
  RelabelRule,
  ScrapeConfig,
  ServiceMonitorResource,
} from '../../../src/handlers/prometheus/types.js';

function prometheus(spec: PrometheusSpec): PrometheusResource {
  return { metadata: { namespace: 'monitoring', name: 'main' }, spec };
}

function podMonitor(
  namespace: string,
  name: string,
  endpoints: PodMetricsEndpoint[],
  extra: Partial<PodMonitorSpec> = {},
  labels: Record<string, string> = {},
): PodMonitorResource {
  return {
    metadata: { namespace, name, labels },
    spec: { selector: { matchLabels: { app: name } }, podMetricsEndpoints: endpoints, ...extra },
  };
}

const namespaces: NamespaceInfo[] = [
  { name: 'monitoring', labels: { scraped: 'yes' } },
  { name: 'shop', labels: { scraped: 'yes' } },
  { name: 'dev' },
];
const ALL: PrometheusSpec = { podMonitorSelector: {}, podMonitorNamespaceSelector: {} };

function render(
  spec: PrometheusSpec,
  podMonitors: PodMonitorResource[],
  serviceMonitors: ServiceMonitorResource[] = [],
): ReturnType<typeof generateConfig> {
  return generateConfig(prometheus(spec), serviceMonitors, namespaces, { podMonitors });
}

function job(
  spec: PrometheusSpec,
  monitor: PodMonitorResource,
  index = 0,
): ScrapeConfig | undefined {
  const result = render(spec, [monitor]);
  expect(result.skipped).toEqual([]);
  return result.config.scrape_configs.find(
    (j) =>
      j.job_name === `podMonitor/${monitor.metadata.namespace}/${monitor.metadata.name}/${index}`,
  );
}

function rulesFor(target: string, j: ScrapeConfig | undefined): RelabelRule[] {
  return (j?.relabel_configs ?? []).filter((rule) => rule.target_label === target);
}

describe('selecting PodMonitors', () => {
  const inShop = podMonitor('shop', 'workers', [{ port: 'metrics' }], {}, { team: 'shop' });
  const inMonitoring = podMonitor('monitoring', 'self', [{ port: 'metrics' }]);
  const inDev = podMonitor('dev', 'scratch', [{ port: 'metrics' }], {}, { team: 'shop' });
  const names = (spec: PrometheusSpec): string[] =>
    render(spec, [inShop, inMonitoring, inDev]).config.scrape_configs.map((j) => j.job_name);

  it('a null or absent podMonitorSelector selects none, even with ServiceMonitors selected', () => {
    expect(names({ serviceMonitorSelector: {}, podMonitorSelector: null })).toEqual([]);
    expect(names({ serviceMonitorSelector: {} })).toEqual([]);
  });

  it("{} with no namespace selector: every PodMonitor in the Prometheus' own namespace", () => {
    expect(names({ podMonitorSelector: {} })).toEqual(['podMonitor/monitoring/self/0']);
  });

  it('podMonitorNamespaceSelector and podMonitorSelector together, sorted by <namespace>/<name>', () => {
    expect(names(ALL)).toEqual([
      'podMonitor/dev/scratch/0',
      'podMonitor/monitoring/self/0',
      'podMonitor/shop/workers/0',
    ]);
    expect(
      names({
        podMonitorSelector: { matchLabels: { team: 'shop' } },
        podMonitorNamespaceSelector: { matchLabels: { scraped: 'yes' } },
      }),
    ).toEqual(['podMonitor/shop/workers/0']);
  });

  it('the ServiceMonitor selectors do not select PodMonitors', () => {
    expect(
      names({
        serviceMonitorSelector: {},
        serviceMonitorNamespaceSelector: {},
        podMonitorSelector: { matchLabels: { team: 'none' } },
      }),
    ).toEqual([]);
  });

  it('PodMonitor jobs follow every ServiceMonitor job', () => {
    const service: ServiceMonitorResource = {
      metadata: { namespace: 'shop', name: 'zzz' },
      spec: { selector: {}, endpoints: [{ port: 'web' }] },
    };
    const result = render(
      { ...ALL, serviceMonitorSelector: {}, serviceMonitorNamespaceSelector: {} },
      [inMonitoring],
      [service],
    );
    expect(result.config.scrape_configs.map((j) => j.job_name)).toEqual([
      'serviceMonitor/shop/zzz/0',
      'podMonitor/monitoring/self/0',
    ]);
  });
});

describe('PodMonitor jobs', () => {
  it("discover Pods (role pod) in the PodMonitor's namespace, or those of namespaceSelector", () => {
    expect(job(ALL, podMonitor('shop', 'w', [{ port: 'metrics' }]))?.kubernetes_sd_configs).toEqual(
      [{ role: 'pod', namespaces: { names: ['shop'] } }],
    );
    expect(
      job(ALL, podMonitor('shop', 'w', [{ port: 'metrics' }], { namespaceSelector: { any: true } }))
        ?.kubernetes_sd_configs,
    ).toEqual([{ role: 'pod' }]);
  });

  it('keep only Pods the selector matches, by Pod labels', () => {
    expect(
      job(ALL, podMonitor('shop', 'w', [{ port: 'metrics' }]))?.relabel_configs,
    ).toContainEqual({
      action: 'keep',
      source_labels: ['__meta_kubernetes_pod_label_app', '__meta_kubernetes_pod_labelpresent_app'],
      regex: '(w);true',
    });
  });

  it.each([
    [
      'port',
      { port: 'metrics' },
      {
        action: 'keep',
        source_labels: ['__meta_kubernetes_pod_container_port_name'],
        regex: 'metrics',
      },
    ],
    [
      'portNumber',
      { portNumber: 9102 },
      {
        action: 'keep',
        source_labels: ['__meta_kubernetes_pod_container_port_number'],
        regex: 9102,
      },
    ],
    [
      'targetPort name',
      { targetPort: 'admin' },
      {
        action: 'keep',
        source_labels: ['__meta_kubernetes_pod_container_port_name'],
        regex: 'admin',
      },
    ],
    [
      'targetPort number',
      { targetPort: 8080 },
      {
        action: 'keep',
        source_labels: ['__meta_kubernetes_pod_container_port_number'],
        regex: 8080,
      },
    ],
  ] as const)('filter the container port by %s', (_what, endpoint, rule) => {
    expect(job(ALL, podMonitor('shop', 'w', [endpoint]))?.relabel_configs).toContainEqual(rule);
  });

  it('without any port, scrape every container port: no port filter, no endpoint label', () => {
    const j = job(ALL, podMonitor('shop', 'w', [{ path: '/stats' }]));
    expect(
      (j?.relabel_configs ?? [])
        .flatMap((rule) => rule.source_labels ?? [])
        .filter((label) => label.includes('container_port')),
    ).toEqual([]);
    expect(rulesFor('endpoint', j)).toEqual([]);
  });

  it('label the endpoint by port name (none for portNumber, as upstream)', () => {
    expect(rulesFor('endpoint', job(ALL, podMonitor('shop', 'w', [{ port: 'metrics' }])))).toEqual([
      { target_label: 'endpoint', replacement: 'metrics' },
    ]);
    expect(rulesFor('endpoint', job(ALL, podMonitor('shop', 'w', [{ portNumber: 9102 }])))).toEqual(
      [],
    );
  });

  it('set namespace, container and pod from the Pod', () => {
    const j = job(ALL, podMonitor('shop', 'w', [{ port: 'metrics' }]));
    expect(rulesFor('namespace', j)).toEqual([
      { source_labels: ['__meta_kubernetes_namespace'], target_label: 'namespace' },
    ]);
    expect(rulesFor('container', j)).toEqual([
      { source_labels: ['__meta_kubernetes_pod_container_name'], target_label: 'container' },
    ]);
    expect(rulesFor('pod', j)).toEqual([
      { source_labels: ['__meta_kubernetes_pod_name'], target_label: 'pod' },
    ]);
  });

  it('name the job <namespace>/<name>, or by the jobLabel where Pods carry it', () => {
    expect(rulesFor('job', job(ALL, podMonitor('shop', 'w', [{ port: 'metrics' }])))).toEqual([
      { target_label: 'job', replacement: 'shop/w' },
    ]);
    expect(
      rulesFor(
        'job',
        job(
          ALL,
          podMonitor('shop', 'w', [{ port: 'metrics' }], { jobLabel: 'app.kubernetes.io/name' }),
        ),
      ),
    ).toEqual([
      { target_label: 'job', replacement: 'shop/w' },
      {
        source_labels: ['__meta_kubernetes_pod_label_app_kubernetes_io_name'],
        target_label: 'job',
        regex: '(.+)',
        replacement: '${1}',
      },
    ]);
  });

  it('copy podTargetLabels from the Pod, names sanitised', () => {
    expect(
      rulesFor(
        'pod_template_hash',
        job(
          ALL,
          podMonitor('shop', 'w', [{ port: 'metrics' }], {
            podTargetLabels: ['pod-template-hash'],
          }),
        ),
      ),
    ).toEqual([
      {
        source_labels: ['__meta_kubernetes_pod_label_pod_template_hash'],
        target_label: 'pod_template_hash',
        regex: '(.+)',
        replacement: '${1}',
      },
    ]);
  });

  it('drop finished Pods unless filterRunning is false', () => {
    const drop = {
      action: 'drop',
      source_labels: ['__meta_kubernetes_pod_phase'],
      regex: '(Failed|Succeeded)',
    };
    expect(
      job(ALL, podMonitor('shop', 'w', [{ port: 'metrics' }]))?.relabel_configs,
    ).toContainEqual(drop);
    expect(
      job(ALL, podMonitor('shop', 'w', [{ port: 'metrics', filterRunning: false }]))
        ?.relabel_configs,
    ).not.toContainEqual(drop);
  });

  it("end with the user's relabelings and carry metricRelabelings, in snake_case", () => {
    const j = job(
      ALL,
      podMonitor('shop', 'w', [
        {
          port: 'metrics',
          relabelings: [
            {
              sourceLabels: ['__meta_kubernetes_pod_node_name'],
              targetLabel: 'node',
              action: 'Replace',
            },
          ],
          metricRelabelings: [{ sourceLabels: ['__name__'], regex: 'go_.*', action: 'DROP' }],
        },
      ]),
    );
    expect(j?.relabel_configs.at(-1)).toEqual({
      source_labels: ['__meta_kubernetes_pod_node_name'],
      target_label: 'node',
      action: 'replace',
    });
    expect(j?.metric_relabel_configs).toEqual([
      { source_labels: ['__name__'], regex: 'go_.*', action: 'drop' },
    ]);
  });

  it('use role selectors for selectorMechanism RoleSelector, instead of selector relabelings', () => {
    const j = job(
      ALL,
      podMonitor('shop', 'w', [{ port: 'metrics' }], { selectorMechanism: 'RoleSelector' }),
    );
    expect(j?.kubernetes_sd_configs).toEqual([
      {
        role: 'pod',
        namespaces: { names: ['shop'] },
        selectors: [{ role: 'pod', label: 'app=w' }],
      },
    ]);
    expect(
      (j?.relabel_configs ?? [])
        .flatMap((rule) => rule.source_labels ?? [])
        .filter((label) => label.startsWith('__meta_kubernetes_pod_label')),
    ).toEqual([]);
  });
});

describe('invalid PodMonitors', () => {
  it('are skipped by podMonitor/<namespace>/<name> with every problem, naming the field; the others render', () => {
    const good = podMonitor('shop', 'good', [{ port: 'metrics' }]);
    const bad = podMonitor('shop', 'bad', [
      { port: 'metrics', interval: '10s', scrapeTimeout: '20s' },
      { portNumber: 70000, relabelings: [{ action: 'rename' }] },
    ]);
    const result = render(ALL, [good, bad]);
    expect(result.config.scrape_configs.map((j) => j.job_name)).toEqual(['podMonitor/shop/good/0']);
    expect(result.skipped).toEqual([
      {
        monitor: 'podMonitor/shop/bad',
        problems: [
          'spec.podMetricsEndpoints[0].scrapeTimeout: 20s is greater than the scrape interval 10s',
          'spec.podMetricsEndpoints[1].portNumber: 70000 is not a port number',
          expect.stringMatching(
            /^spec\.podMetricsEndpoints\[1\]\.relabelings\[0\]\.action: invalid action "rename"/,
          ),
        ],
      },
    ]);
  });

  it('one without endpoints is reported, since it scrapes nothing', () => {
    expect(validatePodMonitor(podMonitor('shop', 'empty', []))).toEqual([
      'spec.podMetricsEndpoints: at least one endpoint is required',
    ]);
  });

  it('a selector value that would break the regex is refused', () => {
    expect(
      validatePodMonitor(
        podMonitor('shop', 'w', [{ port: 'metrics' }], { selector: { matchLabels: { app: '(' } } }),
      ),
    ).toEqual([
      expect.stringMatching(
        /^spec\.selector\.matchLabels\["app"\]: "\(" is not a valid label value/,
      ),
    ]);
  });

  it('a port name that would be a broken regex is caught in the rendered rules', () => {
    const result = render(ALL, [podMonitor('shop', 'w', [{ port: 'metrics(' }])]);
    expect(result.skipped).toEqual([
      {
        monitor: 'podMonitor/shop/w',
        problems: [
          expect.stringMatching(
            /^podMonitor\/shop\/w\/0: relabel_configs\[\d+\]\.regex: "metrics\(" does not compile/,
          ),
        ],
      },
    ]);
  });
});
