import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { loadYaml } from '@kubernetes/client-node';
import {
  generateConfig,
  gzipConfig,
  parseDuration,
  regexProblem,
  sanitizeLabelName,
  validatePrometheus,
  validateServiceMonitor,
} from '../../../src/handlers/prometheus/config.js';
import type { GoldenCase } from '../../fixtures/prometheus/cases.js';
import { GOLDEN_CASES } from '../../fixtures/prometheus/cases.js';
import type {
  Endpoint,
  RelabelConfig,
  ServiceMonitorResource,
} from '../../../src/handlers/prometheus/types.js';

const fixtureDir = fileURLToPath(new URL('../../fixtures/prometheus/', import.meta.url));
// UPDATE_GOLDEN=1 rewrites the golden files from the generator; review the diff before keeping it.
const updateGolden = process.env.UPDATE_GOLDEN === '1';

function golden(name: string, actual: string): string {
  const file = `${fixtureDir}${name}.yaml`;
  if (updateGolden) writeFileSync(file, actual);
  return readFileSync(file, 'utf8');
}

function run(c: GoldenCase): ReturnType<typeof generateConfig> {
  return generateConfig(c.prometheus, c.monitors, c.namespaces, {
    podMonitors: c.podMonitors,
    ruleFiles: c.ruleFiles,
  });
}

/** A seeded shuffle, so a failure is reproducible. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let state = seed;
  for (let i = out.length - 1; i > 0; i--) {
    state = (state * 1103515245 + 12345) % 2147483648;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

function monitor(
  endpoints: Endpoint[],
  extra: Partial<ServiceMonitorResource['spec']> = {},
): ServiceMonitorResource {
  return { metadata: { name: 'm', namespace: 'ns' }, spec: { selector: {}, endpoints, ...extra } };
}

function relabelProblems(rc: RelabelConfig): string[] {
  return validateServiceMonitor(monitor([{ port: 'metrics', relabelings: [rc] }]));
}

describe('generateConfig golden files', () => {
  it.each(GOLDEN_CASES.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const result = run(c);
    expect(result.yaml).toBe(golden(c.name, result.yaml));
    expect(result.skipped.map((s) => s.monitor)).toEqual(c.skipped ?? []);
  });

  it.each(GOLDEN_CASES.map((c) => [c.name, c] as const))(
    '%s: the YAML parses back to the returned config object',
    (_name, c) => {
      const result = run(c);
      expect(loadYaml(result.yaml)).toEqual(result.config);
    },
  );

  it('the §4.1 golden file is the reference text verbatim', () => {
    // Kept here as well, so an accidental UPDATE_GOLDEN cannot drift from the reference.
    const reference = [
      'global:',
      '  scrape_interval: 30s',
      '  external_labels:',
      '    prometheus: monitoring/main',
      '    prometheus_replica: $(POD_NAME)',
      '  evaluation_interval: 30s',
      'scrape_configs:',
      '- job_name: serviceMonitor/shop/checkout/0',
      '  honor_labels: false',
      '  kubernetes_sd_configs:',
      '  - role: endpoints',
      '    namespaces:',
      '      names:',
      '      - shop',
      '  scrape_interval: 15s',
      '  metrics_path: /metrics',
      '  relabel_configs:',
      '  - source_labels: [job]',
      '    target_label: __tmp_prometheus_job_name',
      '  - action: keep',
      '    source_labels: [__meta_kubernetes_service_label_app, __meta_kubernetes_service_labelpresent_app]',
      '    regex: (checkout);true',
      '  - action: keep',
      '    source_labels: [__meta_kubernetes_endpoint_port_name]',
      '    regex: metrics',
      '  - source_labels: [__meta_kubernetes_endpoint_address_target_kind, __meta_kubernetes_endpoint_address_target_name]',
      '    separator: ;',
      '    regex: Node;(.*)',
      '    replacement: ${1}',
      '    target_label: node',
      '  - source_labels: [__meta_kubernetes_endpoint_address_target_kind, __meta_kubernetes_endpoint_address_target_name]',
      '    separator: ;',
      '    regex: Pod;(.*)',
      '    replacement: ${1}',
      '    target_label: pod',
      '  - source_labels: [__meta_kubernetes_namespace]',
      '    target_label: namespace',
      '  - source_labels: [__meta_kubernetes_service_name]',
      '    target_label: service',
      '  - source_labels: [__meta_kubernetes_pod_name]',
      '    target_label: pod',
      '  - source_labels: [__meta_kubernetes_pod_container_name]',
      '    target_label: container',
      '  - action: drop',
      '    source_labels: [__meta_kubernetes_pod_phase]',
      '    regex: (Failed|Succeeded)',
      '  - source_labels: [__meta_kubernetes_service_name]',
      '    target_label: job',
      '    replacement: ${1}',
      '  - target_label: endpoint',
      '    replacement: metrics',
      '',
    ].join('\n');
    expect(readFileSync(`${fixtureDir}minimal.yaml`, 'utf8')).toBe(reference);
    expect(run(GOLDEN_CASES.find((c) => c.name === 'minimal')!).yaml).toBe(reference);
  });

  it('never writes flow mappings', () => {
    for (const c of GOLDEN_CASES) {
      const text = run(c).yaml;
      expect(text).not.toMatch(/: \{/);
      expect(text).not.toMatch(/^\s*- \{/m);
    }
  });
});

describe('generateConfig ordering', () => {
  it.each(GOLDEN_CASES.map((c) => [c.name, c] as const))(
    '%s: shuffled monitors and namespaces give identical bytes',
    (_name, c) => {
      const expected = run(c);
      for (const seed of [1, 7, 42, 1234, 99991]) {
        const again = generateConfig(
          c.prometheus,
          shuffled(c.monitors, seed),
          shuffled(c.namespaces, seed + 1),
          {
            podMonitors: shuffled(c.podMonitors ?? [], seed + 2),
            ruleFiles: c.ruleFiles,
          },
        );
        expect(again.yaml).toBe(expected.yaml);
        expect(again.skipped).toEqual(expected.skipped);
        expect(gzipConfig(again.yaml).equals(gzipConfig(expected.yaml))).toBe(true);
      }
    },
  );

  it('orders jobs by <namespace>/<name>, endpoints in list order', () => {
    const c = GOLDEN_CASES.find((g) => g.name === 'invalid-skipped')!;
    expect(run(c).config.scrape_configs.map((j) => j.job_name)).toEqual([
      'serviceMonitor/shop/good/0',
      'serviceMonitor/web/fine/0',
    ]);
    const t = GOLDEN_CASES.find((g) => g.name === 'target-labels')!;
    expect(run(t).config.scrape_configs.map((j) => j.job_name)).toEqual([
      'serviceMonitor/monitoring/web/0',
      'serviceMonitor/monitoring/web/1',
    ]);
  });

  it('does not modify its inputs', () => {
    for (const c of GOLDEN_CASES) {
      const before = JSON.stringify(c);
      run(c);
      expect(JSON.stringify(c)).toBe(before);
    }
  });
});

describe('generateConfig details', () => {
  it('reports every problem of a skipped monitor, naming the field', () => {
    const c = GOLDEN_CASES.find((g) => g.name === 'invalid-skipped')!;
    const skipped = Object.fromEntries(run(c).skipped.map((s) => [s.monitor, s.problems]));
    expect(skipped['shop/no-endpoints']).toEqual([
      'spec.endpoints: at least one endpoint is required',
    ]);
    expect(skipped['shop/bad-action']).toEqual([
      expect.stringMatching(
        /^spec\.endpoints\[0\]\.relabelings\[0\]\.action: invalid action "rename"/,
      ),
    ]);
    expect(skipped['shop/bad-regex']).toEqual([
      expect.stringMatching(
        /^spec\.endpoints\[0\]\.metricRelabelings\[0\]\.regex: "\(go_\.\*" does not compile/,
      ),
    ]);
    expect(skipped['shop/slow-timeout']).toEqual([
      'spec.endpoints[1].scrapeTimeout: 20s is greater than the scrape interval 10s',
    ]);
    expect(skipped['web/bad-operator']).toEqual([
      expect.stringMatching(
        /^spec\.selector\.matchExpressions\[0\]\.operator: invalid operator "Matches"/,
      ),
    ]);
  });

  it('external labels: sorted, reserved names keep their generated values', () => {
    const c = GOLDEN_CASES.find((g) => g.name === 'external-labels')!;
    const labels = run(c).config.global.external_labels;
    expect(Object.keys(labels)).toEqual([
      'cluster',
      'prometheus',
      'prometheus_replica',
      'region',
      'zone',
    ]);
    expect(labels.prometheus).toBe('monitoring/main');
    expect(labels.prometheus_replica).toBe('$(POD_NAME)');
  });

  it('omits the namespaces block for namespaceSelector.any', () => {
    const c = GOLDEN_CASES.find((g) => g.name === 'namespace-selectors')!;
    const sd = Object.fromEntries(
      run(c).config.scrape_configs.map((j) => [j.job_name, j.kubernetes_sd_configs]),
    );
    expect(sd['serviceMonitor/shop/everything/0']).toEqual([{ role: 'endpoints' }]);
    expect(sd['serviceMonitor/payments/ledger/0']).toEqual([
      { role: 'endpoints', namespaces: { names: ['payments', 'payments-canary'] } },
    ]);
    expect(sd['serviceMonitor/payments/own/0']).toEqual([
      { role: 'endpoints', namespaces: { names: ['payments'] } },
    ]);
    expect(sd['serviceMonitor/kube-system/dns/0']).toBeUndefined();
  });

  it('throws for an invalid Prometheus object rather than rendering a config Prometheus rejects', () => {
    const bad = {
      metadata: { name: 'p', namespace: 'm' },
      spec: { serviceMonitorSelector: {}, scrapeInterval: '10s', scrapeTimeout: '1m' },
    };
    expect(() => generateConfig(bad, [], [])).toThrow(
      /spec\.scrapeTimeout: 1m is greater than spec\.scrapeInterval/,
    );
    expect(
      validatePrometheus({ metadata: bad.metadata, spec: { evaluationInterval: 'soon' } }),
    ).toEqual(['spec.evaluationInterval: "soon" is not a valid duration (e.g. 30s, 1m30s, 500ms)']);
    expect(validatePrometheus({ metadata: bad.metadata, spec: { scrapeTimeout: '30s' } })).toEqual(
      [],
    );
    // Empty strings count as unset, here as when rendering.
    expect(
      validatePrometheus({
        metadata: bad.metadata,
        spec: { scrapeInterval: '', scrapeTimeout: '' },
      }),
    ).toEqual([]);
    expect(
      generateConfig({ metadata: bad.metadata, spec: { scrapeInterval: '' } }, [], []).config
        .global,
    ).toEqual({
      scrape_interval: '30s',
      external_labels: { prometheus: 'm/p', prometheus_replica: '$(POD_NAME)' },
      evaluation_interval: '30s',
    });
  });

  it('falls back to block lists when input already contains the internal flow token', () => {
    const c = GOLDEN_CASES.find((g) => g.name === 'minimal')!;
    const tricky = c.monitors.map((m) => ({
      ...m,
      spec: { ...m.spec, jobLabel: '__konductor_flow_0__' },
    }));
    const result = generateConfig(c.prometheus, tricky, c.namespaces);
    expect(result.yaml).toContain('  - source_labels:\n    - job\n');
    expect(loadYaml(result.yaml)).toEqual(result.config);
  });
});

describe('validateServiceMonitor', () => {
  it('accepts a plain monitor', () => {
    expect(validateServiceMonitor(monitor([{ port: 'metrics' }]))).toEqual([]);
    expect(validateServiceMonitor(monitor([{ targetPort: 'web' }, { targetPort: 9090 }]))).toEqual(
      [],
    );
  });

  it('requires endpoints; an endpoint naming no port is fine (it scrapes every port, as upstream)', () => {
    expect(validateServiceMonitor(monitor([]))).toEqual([
      'spec.endpoints: at least one endpoint is required',
    ]);
    expect(
      validateServiceMonitor(monitor([{ port: '' }, { targetPort: 0 }, { path: '/metrics' }])),
    ).toEqual([]);
    expect(validateServiceMonitor(monitor([{ targetPort: 70000 }]))).toEqual([
      'spec.endpoints[0].targetPort: 70000 is not a port number',
    ]);
  });

  it('checks durations and scrapeTimeout against interval (or the Prometheus default)', () => {
    expect(
      validateServiceMonitor(monitor([{ port: 'm', interval: '15s', scrapeTimeout: '1m30s' }])),
    ).toEqual(['spec.endpoints[0].scrapeTimeout: 1m30s is greater than the scrape interval 15s']);
    expect(
      validateServiceMonitor(monitor([{ port: 'm', interval: '15s', scrapeTimeout: '15s' }])),
    ).toEqual([]);
    expect(validateServiceMonitor(monitor([{ port: 'm', scrapeTimeout: '500ms' }]), '1s')).toEqual(
      [],
    );
    expect(validateServiceMonitor(monitor([{ port: 'm', scrapeTimeout: '45s' }]))).toEqual([
      'spec.endpoints[0].scrapeTimeout: 45s is greater than the scrape interval 30s',
    ]);
    expect(
      validateServiceMonitor(monitor([{ port: 'm', interval: '', scrapeTimeout: '' }])),
    ).toEqual([]);
    expect(
      validateServiceMonitor(monitor([{ port: 'm', interval: '', scrapeTimeout: '31s' }])),
    ).toEqual(['spec.endpoints[0].scrapeTimeout: 31s is greater than the scrape interval 30s']);
    expect(validateServiceMonitor(monitor([{ port: 'm', interval: '15 s' }]))).toEqual([
      'spec.endpoints[0].interval: "15 s" is not a valid duration (e.g. 30s, 1m30s, 500ms)',
    ]);
  });

  it('checks the scheme', () => {
    expect(validateServiceMonitor(monitor([{ port: 'm', scheme: 'HTTPS' }]))).toEqual([]);
    expect(validateServiceMonitor(monitor([{ port: 'm', scheme: 'ftp' }]))).toEqual([
      'spec.endpoints[0].scheme: "ftp" must be http or https',
    ]);
  });

  it('checks selector requirements', () => {
    const problems = validateServiceMonitor(
      monitor([{ port: 'm' }], {
        selector: {
          matchExpressions: [
            { key: 'a', operator: 'In', values: [] },
            { key: 'b', operator: 'Exists', values: ['x'] },
            { key: 'c', operator: 'Gt' as 'In', values: ['1'] },
          ],
        },
      }),
    );
    expect(problems).toEqual([
      'spec.selector.matchExpressions[0].values: must be non-empty for operator In',
      'spec.selector.matchExpressions[1].values: must be empty for operator Exists',
      'spec.selector.matchExpressions[2].operator: invalid operator "Gt" (allowed: In, NotIn, Exists, DoesNotExist)',
    ]);
  });

  it('accepts every relabel action in any case', () => {
    for (const action of ['replace', 'Keep', 'DROP', 'labelmap', 'LabelDrop', 'labelkeep']) {
      expect(
        relabelProblems({
          action,
          targetLabel: action.toLowerCase() === 'replace' ? 'x' : undefined,
        }),
      ).toEqual([]);
    }
    expect(
      relabelProblems({ action: 'HashMod', sourceLabels: ['a'], modulus: 2, targetLabel: 'h' }),
    ).toEqual([]);
    for (const action of ['lowercase', 'UPPERCASE', 'keepEqual', 'dropequal']) {
      expect(relabelProblems({ action, sourceLabels: ['a'], targetLabel: 'b' })).toEqual([]);
    }
  });

  it('rejects invalid relabel configs, naming the field', () => {
    expect(relabelProblems({ action: 'rename' })).toEqual([
      'spec.endpoints[0].relabelings[0].action: invalid action "rename" (allowed: replace, keep, drop, hashmod, labelmap, labeldrop, labelkeep, lowercase, uppercase, keepequal, dropequal, any case)',
    ]);
    expect(relabelProblems({ action: 'replace', regex: 'a[' })[0]).toMatch(
      /^spec\.endpoints\[0\]\.relabelings\[0\]\.regex: "a\[" does not compile/,
    );
    expect(relabelProblems({ action: 'hashmod', sourceLabels: ['a'], targetLabel: 'h' })).toEqual([
      'spec.endpoints[0].relabelings[0].modulus: required (non-zero) for action hashmod',
    ]);
    expect(relabelProblems({ action: 'replace' })).toEqual([
      'spec.endpoints[0].relabelings[0].targetLabel: required for action replace',
    ]);
    expect(relabelProblems({ targetLabel: 'bad-name' })).toEqual([
      'spec.endpoints[0].relabelings[0].targetLabel: "bad-name" is invalid for action replace',
    ]);
    expect(relabelProblems({ sourceLabels: ['ok', 'not ok'], targetLabel: 'x' })).toEqual([
      'spec.endpoints[0].relabelings[0].sourceLabels[1]: "not ok" is not a valid label name',
    ]);
    expect(relabelProblems({ action: 'labeldrop', regex: 'x', targetLabel: 'y' })).toEqual([
      'spec.endpoints[0].relabelings[0]: action labeldrop takes only regex',
    ]);
    expect(
      relabelProblems({ action: 'keepequal', sourceLabels: ['a'], targetLabel: 'b', regex: 'x' }),
    ).toEqual([
      'spec.endpoints[0].relabelings[0]: action keepequal takes only sourceLabels and targetLabel',
    ]);
    expect(
      relabelProblems({
        action: 'lowercase',
        sourceLabels: ['a'],
        targetLabel: 'b',
        replacement: 'c',
      }),
    ).toEqual(['spec.endpoints[0].relabelings[0].replacement: cannot be set for action lowercase']);
    expect(
      relabelProblems({ action: 'labelmap', regex: '(.+)', replacement: 'not-a-label' }),
    ).toEqual([
      'spec.endpoints[0].relabelings[0].replacement: "not-a-label" is invalid for action labelmap',
    ]);
  });

  it('checks metricRelabelings too', () => {
    const problems = validateServiceMonitor(
      monitor([{ port: 'm', metricRelabelings: [{ action: 'drop', regex: '(' }] }]),
    );
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^spec\.endpoints\[0\]\.metricRelabelings\[0\]\.regex: /);
  });
});

describe('regexProblem (RE2 via re2js, anchored as Prometheus does)', () => {
  it.each([
    '',
    '(.*)',
    'Node;(.*)',
    '(?i)kube-.*',
    '(?i:a)b',
    '(?P<name>x)',
    '[]a]',
    '[^]a]',
    'a\\\\1',
    'a)(b',
    'a{1000}',
    '[(?<n>x)]',
    '\\Q(?<n>\\E',
  ])('accepts %j', (re) => {
    // `a\\1` (a literal backslash, then 1) is no backreference; `a)(b` is valid once anchored as ^(?:a)(b)$.
    expect(regexProblem(re)).toBeUndefined();
  });

  it.each([
    ['(', /missing closing \)/],
    ['a[', /missing closing \]/],
    ['[]', /missing closing \]/],
    ['x{2,1}', /invalid repeat count/],
    ['a{1001}', /invalid repeat count/],
    ['\\q', /invalid escape sequence/],
    ['a(?=b)', /invalid or unsupported Perl syntax/],
    ['(?<!a)b', /error parsing regexp/],
    ['(a)\\1', /invalid escape sequence/],
    ['(?z)a', /invalid or unsupported Perl syntax/],
    ['(?<n>x)', /\(\?<.*\(\?P<name>/],
    ['a(?<n>x)|b', /\(\?</],
  ])('rejects %j', (re, why) => {
    expect(regexProblem(re)).toMatch(why);
  });
});

describe('selector label keys and values', () => {
  it('accepts Kubernetes label values: empty, or up to 63 of [A-Za-z0-9._-] starting and ending alphanumeric', () => {
    const values = ['', 'a', 'checkout', 'v1.2.3', 'a_b-c.d', 'x'.repeat(63)];
    expect(
      validateServiceMonitor(
        monitor([{ port: 'm' }], {
          selector: { matchLabels: Object.fromEntries(values.map((v, i) => [`k${i}`, v])) },
        }),
      ),
    ).toEqual([]);
  });

  it.each(['(', 'a b', '-a', 'a-', 'x'.repeat(64), 'a|b', 'caf\u00e9'])(
    'refuses the matchLabels value %j, naming it',
    (value) => {
      expect(
        validateServiceMonitor(
          monitor([{ port: 'm' }], { selector: { matchLabels: { app: value } } }),
        ),
      ).toEqual([
        expect.stringMatching(
          /^spec\.selector\.matchLabels\["app"\]: .* is not a valid label value: /,
        ),
      ]);
    },
  );

  it('refuses bad keys and matchExpressions values too', () => {
    const problems = validateServiceMonitor(
      monitor([{ port: 'm' }], {
        selector: {
          matchLabels: { 'bad key': 'x', 'example.com/ok': 'y' },
          matchExpressions: [
            { key: 'Bad_Prefix/x', operator: 'Exists' },
            { key: 'env', operator: 'In', values: ['prod', 'prod)|(.*'] },
          ],
        },
      }),
    );
    expect(problems).toEqual([
      expect.stringMatching(/^spec\.selector\.matchLabels: key "bad key" is not a valid label key/),
      expect.stringMatching(
        /^spec\.selector\.matchExpressions\[0\]\.key: "Bad_Prefix\/x" is not a valid label key: prefix/,
      ),
      expect.stringMatching(
        /^spec\.selector\.matchExpressions\[1\]\.values\[1\]: "prod\)\|\(\.\*" is not a valid label value/,
      ),
    ]);
  });
});

describe('duration range', () => {
  it.each(['292y', '292y1w', '106751d', '2562047h', '9223372036854ms'])(
    'accepts %s, within int64 nanoseconds',
    (interval) => {
      expect(validateServiceMonitor(monitor([{ port: 'm', interval }]))).toEqual([]);
    },
  );

  it.each(['300y', '293y', '106752d', '9223372036855ms', '99999999999999999999s', '292y52w'])(
    'refuses %s, past int64 nanoseconds',
    (interval) => {
      expect(validateServiceMonitor(monitor([{ port: 'm', interval }]))).toEqual([
        `spec.endpoints[0].interval: "${interval}" is out of range (Prometheus durations end at about 292y)`,
      ]);
    },
  );

  it('refuses an overflowing scrapeTimeout and Prometheus-wide durations too', () => {
    expect(validateServiceMonitor(monitor([{ port: 'm', scrapeTimeout: '300y' }]))).toEqual([
      'spec.endpoints[0].scrapeTimeout: "300y" is out of range (Prometheus durations end at about 292y)',
    ]);
    expect(
      validatePrometheus({
        metadata: { name: 'p', namespace: 'n' },
        spec: { scrapeInterval: '300y' },
      }),
    ).toEqual([
      'spec.scrapeInterval: "300y" is out of range (Prometheus durations end at about 292y)',
    ]);
  });
});

describe('rendered rules', () => {
  it('skips a monitor whose port name would be a broken regex', () => {
    const c = GOLDEN_CASES.find((g) => g.name === 'minimal')!;
    const bad = {
      ...c.monitors[0]!,
      spec: { ...c.monitors[0]!.spec, endpoints: [{ port: 'metrics(' }] },
    };
    const result = generateConfig(c.prometheus, [bad], c.namespaces);
    expect(result.config.scrape_configs).toEqual([]);
    expect(result.skipped).toEqual([
      {
        monitor: 'shop/checkout',
        problems: [
          expect.stringMatching(
            /^serviceMonitor\/shop\/checkout\/0: relabel_configs\[2\]\.regex: "metrics\(" does not compile/,
          ),
        ],
      },
    ]);
  });

  it('skips a monitor whose targetLabels entry is no Prometheus label name once sanitised', () => {
    const c = GOLDEN_CASES.find((g) => g.name === 'minimal')!;
    const bad = { ...c.monitors[0]!, spec: { ...c.monitors[0]!.spec, targetLabels: ['1st'] } };
    const result = generateConfig(c.prometheus, [bad], c.namespaces);
    expect(result.skipped).toEqual([
      {
        monitor: 'shop/checkout',
        problems: [expect.stringMatching(/target_label: "1st" is not a valid label name/)],
      },
    ]);
  });
});

describe('helpers', () => {
  it('parseDuration', () => {
    expect(parseDuration('15s')).toBe(15_000);
    expect(parseDuration('1m30s')).toBe(90_000);
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('1h5m')).toBe(3_900_000);
    expect(parseDuration('2d')).toBe(172_800_000);
    expect(parseDuration('1w')).toBe(604_800_000);
    expect(parseDuration('1y')).toBe(31_536_000_000);
    expect(parseDuration('0')).toBe(0);
    for (const bad of ['', '15', '1.5s', '30s1m', '-1s', '1 m', 's'])
      expect(parseDuration(bad)).toBeUndefined();
  });

  it('sanitizeLabelName', () => {
    expect(sanitizeLabelName('app.kubernetes.io/name')).toBe('app_kubernetes_io_name');
    expect(sanitizeLabelName('pod-template-hash')).toBe('pod_template_hash');
    expect(sanitizeLabelName('ok_1')).toBe('ok_1');
  });

  it('gzipConfig: deterministic bytes with a zero mtime, round-trips', () => {
    const yaml = run(GOLDEN_CASES[0]!).yaml;
    const a = gzipConfig(yaml);
    const b = gzipConfig(yaml);
    expect(a.equals(b)).toBe(true);
    expect([...a.subarray(0, 3)]).toEqual([0x1f, 0x8b, 8]);
    expect(a.readUInt32LE(4)).toBe(0);
    expect(gunzipSync(a).toString('utf8')).toBe(yaml);
  });
});
