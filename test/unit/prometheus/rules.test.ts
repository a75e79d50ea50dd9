/**
 * PrometheusRules as rule files: which a Prometheus selects, which groups are refused, how files
 * are packed into ConfigMaps, and that every rendered file is one the real `promtool check rules`
 * accepts (npm run provision installs it; a missing promtool fails, never skips).
 */
import { promtool } from '../../support/promtool.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import type { KubeObject } from 'konductor';
import {
  MAX_RULE_CONFIGMAP_BYTES,
  packRuleFiles,
  ruleConfigMaps,
  ruleFilesGlob,
} from '../../../src/handlers/prometheus/children.js';
import { MAX_EXPR_LENGTH } from '../../../src/handlers/prometheus/promql-syntax.js';
import {
  ALL_GROUPS,
  checkRuleGroups,
  renderRuleFile,
  ruleFiles,
  selectRules,
  type PrometheusRuleResource,
  type RefusedGroup,
} from '../../../src/handlers/prometheus/rules.js';
import type { PrometheusResource } from '../../../src/handlers/prometheus/types.js';

type Prometheus = PrometheusResource & KubeObject;

function prometheusObject(spec: Record<string, unknown>): Prometheus {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'Prometheus',
    metadata: { name: 'main', namespace: 'monitoring', uid: 'prom-uid' },
    spec,
  };
}

function ruleObject(
  namespace: string,
  name: string,
  groups: unknown,
  labels: Record<string, string> = { role: 'alerts' },
): PrometheusRuleResource {
  return {
    metadata: { namespace, name, uid: `${name}-uid`, generation: 1, labels },
    spec: { groups },
  };
}

const VALID_GROUP = {
  name: 'node',
  interval: '1m',
  rules: [
    {
      record: 'instance:node_cpu:rate5m',
      expr: 'sum by (instance) (rate(node_cpu_seconds_total{mode!="idle"}[5m]))',
      labels: { team: 'infra' },
    },
    {
      alert: 'NodeDown',
      expr: 'up{job="node"} == 0',
      for: '5m',
      keep_firing_for: '10m',
      labels: { severity: 'critical' },
      annotations: {
        summary: 'Node {{ $labels.instance }} is down',
        description: 'down for {{ $value }}',
      },
    },
  ],
};

describe('selecting PrometheusRules', () => {
  const rules = [
    ruleObject('monitoring', 'b', []),
    ruleObject('monitoring', 'a', []),
    ruleObject('monitoring', 'other', [], { role: 'recording' }),
    ruleObject('team-x', 'x', []),
  ];
  const namespaces = [
    { name: 'monitoring', labels: { watched: 'yes' } },
    { name: 'team-x', labels: { watched: 'yes' } },
    { name: 'team-y' },
  ];
  const names = (selected: PrometheusRuleResource[]): string[] =>
    selected.map((r) => `${r.metadata.namespace}/${r.metadata.name}`);

  it('a null or absent ruleSelector selects none', () => {
    expect(selectRules(prometheusObject({ ruleSelector: null }), rules, namespaces)).toEqual([]);
    expect(selectRules(prometheusObject({}), rules, namespaces)).toEqual([]);
  });

  it("without a ruleNamespaceSelector only the Prometheus's own namespace counts, sorted by name", () => {
    expect(
      names(
        selectRules(
          prometheusObject({ ruleSelector: { matchLabels: { role: 'alerts' } } }),
          rules,
          namespaces,
        ),
      ),
    ).toEqual(['monitoring/a', 'monitoring/b']);
  });

  it('a ruleNamespaceSelector reaches the namespaces whose labels match it', () => {
    const prometheus = prometheusObject({
      ruleSelector: {},
      ruleNamespaceSelector: { matchLabels: { watched: 'yes' } },
    });
    expect(names(selectRules(prometheus, rules, namespaces))).toEqual([
      'monitoring/a',
      'monitoring/b',
      'monitoring/other',
      'team-x/x',
    ]);
  });
});

describe('checking rule groups', () => {
  const refusedOf = (groups: unknown): Array<{ group: string; problems: string[] }> =>
    checkRuleGroups(ruleObject('monitoring', 'r', groups)).refused;

  it("keeps a valid group as written, in Prometheus' field names", () => {
    const { groups, refused } = checkRuleGroups(ruleObject('monitoring', 'r', [VALID_GROUP]));
    expect(refused).toEqual([]);
    expect(groups).toEqual([VALID_GROUP]);
  });

  it('refuses a group without a name, naming its position', () => {
    expect(refusedOf([{ rules: [] }])).toEqual([
      { group: 'groups[0]', problems: ['name is missing: every rule group needs a name'] },
    ]);
  });

  it('refuses the second group of a repeated name and keeps the first', () => {
    const { groups, refused } = checkRuleGroups(
      ruleObject('monitoring', 'r', [VALID_GROUP, { ...VALID_GROUP }]),
    );
    expect(groups.map((g) => g.name)).toEqual(['node']);
    expect(refused).toEqual([
      {
        group: 'node',
        problems: ['the group name "node" is used by an earlier group of this PrometheusRule'],
      },
    ]);
  });

  it.each([
    [
      'neither record nor alert',
      { expr: 'up' },
      'rules[0] must have exactly one of record and alert',
    ],
    [
      'both record and alert',
      { record: 'r', alert: 'A', expr: 'up' },
      'rules[0] must have exactly one of record and alert',
    ],
    [
      'an unparseable for',
      { alert: 'A', expr: 'up', for: '5 minutes' },
      'rules[0].for "5 minutes" is not a valid duration',
    ],
    [
      'an expr that is a map',
      { alert: 'A', expr: { query: 'up' } },
      'rules[0].expr must be a PromQL string, not object',
    ],
    ['a missing expr', { alert: 'A' }, 'rules[0].expr must be a PromQL string, not undefined'],
    [
      'a recording rule name that is no metric name',
      { record: 'my-metric', expr: 'up' },
      'rules[0].record "my-metric" is not a valid metric name',
    ],
    [
      'for on a recording rule',
      { record: 'r', expr: 'up', for: '5m' },
      'rules[0].for is only allowed on alerting rules',
    ],
    [
      'an invalid label name',
      { alert: 'A', expr: 'up', labels: { 'team-name': 'x' } },
      'rules[0].labels name "team-name" is not a valid label name',
    ],
    [
      'an unclosed template',
      { alert: 'A', expr: 'up', annotations: { summary: '{{ $value ' } },
      'rules[0].annotations.summary has a "{{" without "}}"',
    ],
  ])('refuses a group with %s', (_what, rule, problem) => {
    const refused = refusedOf([{ name: 'g', rules: [rule] }]);
    expect(refused).toHaveLength(1);
    expect(refused[0]!.group).toBe('g');
    expect(refused[0]!.problems.join('\n')).toContain(problem);
  });

  it("accepts an integer expr, as upstream's int-or-string field does, writing it as text", () => {
    const { groups } = checkRuleGroups(
      ruleObject('monitoring', 'r', [{ name: 'g', rules: [{ alert: 'Always', expr: 1 }] }]),
    );
    expect(groups[0]!.rules[0]!.expr).toBe('1');
  });

  it("writes a group's labels for Prometheus 3 and leaves them out for 2.x, which refuses the whole file over them", () => {
    const labelled = [
      ruleObject('monitoring', 'r', [
        { name: 'g', labels: { team: 'infra' }, rules: [{ record: 'r', expr: 'up' }] },
      ]),
    ];
    const groupsFor = (version: string): unknown =>
      yaml.load(
        ruleFiles(prometheusObject({ ruleSelector: {}, version }), labelled, [])[0]!.content!,
      );
    expect(groupsFor('v3.1.0')).toEqual({
      groups: [{ name: 'g', labels: { team: 'infra' }, rules: [{ record: 'r', expr: 'up' }] }],
    });
    expect(groupsFor('v2.42.0')).toEqual({
      groups: [{ name: 'g', rules: [{ record: 'r', expr: 'up' }] }],
    });
  });

  it('brackets inside PromQL strings and comments do not count', () => {
    expect(
      refusedOf([
        {
          name: 'g',
          rules: [{ record: 'r', expr: 'up{job="a(b"} # unbalanced ( in a comment\n+ 1' }],
        },
      ]),
    ).toEqual([]);
  });
});

describe("checking rule expressions with Prometheus' PromQL grammar", () => {
  const refusedOf = (groups: unknown, version = 'v2.42.0'): RefusedGroup[] =>
    ruleFiles(
      prometheusObject({ ruleSelector: {}, version }),
      [ruleObject('monitoring', 'r', groups)],
      [],
    )[0]!.refused;

  it('a well-formed expression passes', () => {
    const expr =
      'histogram_quantile(0.99, sum by (le, job) (rate(http_request_duration_seconds_bucket{job=~"api|web"}[5m]))) > 0.5 and on (job) up == 1';
    expect(refusedOf([{ name: 'latency', rules: [{ alert: 'SlowRequests', expr }] }])).toEqual([]);
  });

  it.each([
    ['rate(x[5m]', 'line 1, column 11: unexpected end of expression'],
    ['sum by (job) (', 'line 1, column 15: unexpected end of expression'],
    ['foo{bar=}', 'line 1, column 9: unexpected "}"'],
    ['1 +', 'line 1, column 4: unexpected end of expression'],
  ])('refuses %s, naming the rule, the group and where it stops parsing', (expr, where) => {
    const refused = refusedOf([{ name: 'api', rules: [{ alert: 'HighErrorRate', expr }] }]);
    expect(refused).toEqual([
      {
        group: 'api',
        problems: [`rules[0] (alert "HighErrorRate").expr does not parse at ${where}`],
      },
    ]);
  });

  it('names a recording rule by its record name', () => {
    expect(
      refusedOf([{ name: 'g', rules: [{ record: 'job:up:sum', expr: 'sum(up' }] }])[0]!.problems,
    ).toEqual([
      'rules[0] (record "job:up:sum").expr does not parse at line 1, column 7: unexpected end of expression',
    ]);
  });

  it('reports the line and column of a multi-line expression', () => {
    expect(
      refusedOf([
        { name: 'g', rules: [{ record: 'r', expr: 'sum(\n  rate(x[5m])\n  by (job)' }] },
      ])[0]!.problems[0],
    ).toContain('line 3, column 3: unexpected "by"');
  });

  it('refuses a call of a function PromQL does not have, naming it', () => {
    expect(
      refusedOf([{ name: 'g', rules: [{ record: 'r', expr: 'rates(x[5m])' }] }])[0]!.problems[0],
    ).toContain('unknown function "rates"');
  });

  it('accepts holt_winters for Prometheus 2.x and refuses it for 3.x, which removed it', () => {
    const groups = [{ name: 'g', rules: [{ record: 'r', expr: 'holt_winters(x[1h], 0.5, 0.5)' }] }];
    expect(refusedOf(groups, 'v2.42.0')).toEqual([]);
    expect(refusedOf(groups, 'v3.1.0')[0]!.problems[0]).toContain(
      'unknown function "holt_winters"',
    );
  });

  it.each([
    [
      'an unterminated string',
      'up{job="api}',
      'has an unterminated string starting at line 1, column 8',
    ],
    [
      'a string broken over two lines',
      'up{job="a\nb"}',
      'has an unterminated string starting at line 1, column 8',
    ],
    [
      'an unknown escape',
      'up{job="a\\qb"}',
      'has an invalid string at line 1, column 8: unknown escape sequence "\\q"',
    ],
  ])('refuses %s, which the grammar lets through', (_what, expr, problem) => {
    expect(refusedOf([{ name: 'g', rules: [{ alert: 'A', expr }] }])[0]!.problems).toEqual([
      `rules[0] (alert "A").expr ${problem}`,
    ]);
  });

  it('refuses an expression over 64 KiB before parsing it', () => {
    const expr = `up${' '.repeat(MAX_EXPR_LENGTH)}`;
    expect(refusedOf([{ name: 'g', rules: [{ record: 'r', expr }] }])[0]!.problems[0]).toContain(
      `more than the ${MAX_EXPR_LENGTH} this operator checks`,
    );
  });

  it('a group with a bad expression is left out while the other group of the same PrometheusRule is rendered', () => {
    const [file] = ruleFiles(
      prometheusObject({ ruleSelector: {} }),
      [
        ruleObject('monitoring', 'r', [
          { name: 'broken', rules: [{ record: 'r', expr: 'rate(x[5m]' }] },
          VALID_GROUP,
        ]),
      ],
      [],
    );
    expect(file!.refused.map((r) => r.group)).toEqual(['broken']);
    expect(
      (yaml.load(file!.content!) as { groups: Array<{ name: string }> }).groups.map((g) => g.name),
    ).toEqual(['node']);
  });

  it('a spec.groups that is not a list refuses the whole PrometheusRule', () => {
    expect(refusedOf({ name: 'g' })).toEqual([
      { group: ALL_GROUPS, problems: ['spec.groups must be a list, not object'] },
    ]);
  });

  it('one bad group leaves the others of the same object in its file', () => {
    const prometheus = prometheusObject({ ruleSelector: {} });
    const [file] = ruleFiles(
      prometheus,
      [ruleObject('monitoring', 'r', [VALID_GROUP, { name: 'broken', rules: [{ expr: 'up' }] }])],
      [],
    );
    expect(file!.refused.map((r) => r.group)).toEqual(['broken']);
    expect(
      (yaml.load(file!.content!) as { groups: Array<{ name: string }> }).groups.map((g) => g.name),
    ).toEqual(['node']);
  });
});

describe('rule files and their ConfigMaps', () => {
  it('key each file as upstream does: <namespace>-<name>-<uid>.yaml', () => {
    const files = ruleFiles(
      prometheusObject({ ruleSelector: {} }),
      [ruleObject('monitoring', 'alerts', [VALID_GROUP])],
      [],
    );
    expect(files.map((f) => f.key)).toEqual(['monitoring-alerts-alerts-uid.yaml']);
  });

  it('refuse a whole PrometheusRule whose file would not fit one ConfigMap', () => {
    // Each expression stays under the per-expression limit; together they exceed a ConfigMap.
    const rules = Array.from(
      { length: Math.ceil(MAX_RULE_CONFIGMAP_BYTES / 60_000) + 1 },
      (_, i) => ({ record: `r${i}`, expr: `vector(1) # ${'x'.repeat(60_000)}` }),
    );
    const huge = { name: 'huge', rules };
    const [file] = ruleFiles(
      prometheusObject({ ruleSelector: {} }),
      [ruleObject('monitoring', 'big', [huge])],
      [],
    );
    expect(file!.content).toBeUndefined();
    expect(file!.refused[0]!.problems[0]).toContain('larger than');
  });

  it('pack files first-fit in key order into ConfigMaps of at most half a MiB, at least one', () => {
    expect(packRuleFiles(new Map())).toEqual([{}]);
    const third = 'x'.repeat(MAX_RULE_CONFIGMAP_BYTES / 3);
    const buckets = packRuleFiles(
      new Map([
        ['c.yaml', third],
        ['a.yaml', third],
        ['b.yaml', third],
        ['d.yaml', 'small'],
      ]),
    );
    expect(buckets.map((b) => Object.keys(b))).toEqual([
      ['a.yaml', 'b.yaml'],
      ['c.yaml', 'd.yaml'],
    ]);
  });

  it('name the ConfigMaps prometheus-<name>-rulefiles-<i>, labelled and owned by the Prometheus', () => {
    const prometheus = prometheusObject({ ruleSelector: {} });
    const [configMap] = ruleConfigMaps(prometheus, new Map([['k.yaml', 'groups: []\n']]));
    expect(configMap!.metadata).toEqual({
      name: 'prometheus-main-rulefiles-0',
      namespace: 'monitoring',
      labels: { 'prometheus-name': 'main', 'managed-by': 'prometheus-operator' },
      ownerReferences: [
        {
          apiVersion: 'monitoring.coreos.com/v1',
          kind: 'Prometheus',
          name: 'main',
          uid: 'prom-uid',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    });
    expect(ruleFilesGlob('prometheus-main-rulefiles-0')).toBe(
      '/etc/prometheus/rules/prometheus-main-rulefiles-0/*.yaml',
    );
  });
});

describe('rendered rule files pass promtool check rules', () => {
  let workDir = '';
  beforeAll(() => {
    workDir = mkdtempSync(join(tmpdir(), 'konductor-rules-'));
  });
  afterAll(() => {
    rmSync(workDir, { recursive: true, force: true });
  });

  function checkRules(file: string): Promise<{ code: number; output: string }> {
    return promtool(['check', 'rules', file]);
  }

  const mixed = [
    VALID_GROUP,
    {
      name: 'limits',
      interval: '30s',
      limit: 10,
      rules: [{ record: 'job:up:sum', expr: 'sum by (job) (up)' }],
    },
    { name: 'empty', rules: [] },
    {
      name: 'int-expr',
      rules: [
        {
          alert: 'AlwaysFiring',
          expr: 1,
          annotations: { summary: 'multi\nline: "quoted" {{ $labels.job }}' },
        },
      ],
    },
    {
      name: 'multiline',
      rules: [{ record: 'x:y:z', expr: 'sum(\n  rate(http_requests_total[5m])\n)\n' }],
    },
    // Refused, so never written: each would make promtool refuse the whole file.
    { rules: [{ record: 'r', expr: 'up' }] },
    { name: 'node', rules: [{ record: 'dup', expr: 'up' }] },
    { name: 'bad-rule', rules: [{ record: 'r', alert: 'A', expr: 'up' }] },
    { name: 'bad-for', rules: [{ alert: 'A', expr: 'up', for: 'soon' }] },
    { name: 'bad-expr', rules: [{ alert: 'A', expr: ['up'] }] },
    { name: 'bad-template', rules: [{ alert: 'A', expr: 'up', labels: { severity: '{{ oops' } }] },
    { name: 'for-on-record', rules: [{ record: 'r', expr: 'up', for: '1m' }] },
    {
      name: 'bad-promql',
      rules: [
        { record: 'ok', expr: 'up' },
        { alert: 'Broken', expr: 'sum by (job) (' },
      ],
    },
    { name: 'bad-escape', rules: [{ alert: 'A', expr: 'up{job="a\\qb"}' }] },
    // Prometheus 2.x still has holt_winters (the grammar, following 3.x, does not).
    {
      name: 'holt-winters',
      rules: [{ record: 'smoothed', expr: 'holt_winters(x[1h], 0.5, 0.5)' }],
    },
    // Fields promtool 2.42 does not know are left out, not written.
    {
      name: 'newer-fields',
      labels: { team: 'x' },
      query_offset: '1m',
      rules: [{ record: 'z', expr: 'up', unknown: true }],
    },
  ];

  it('a file with valid groups and every kind of refused one loads in promtool, holding exactly the valid groups', async () => {
    const [file] = ruleFiles(
      prometheusObject({ ruleSelector: {} }),
      [ruleObject('monitoring', 'mixed', mixed)],
      [],
    );
    expect(file!.refused.map((r) => r.group)).toEqual([
      'groups[5]',
      'node',
      'bad-rule',
      'bad-for',
      'bad-expr',
      'bad-template',
      'for-on-record',
      'bad-promql',
      'bad-escape',
    ]);
    const path = join(workDir, file!.key!);
    writeFileSync(path, file!.content!);
    const result = await checkRules(path);
    expect(result.output).toContain('SUCCESS: 7 rules found');
    expect(result.code).toBe(0);
    expect(
      (yaml.load(file!.content!) as { groups: Array<{ name: string }> }).groups.map((g) => g.name),
    ).toEqual(['node', 'limits', 'empty', 'int-expr', 'multiline', 'holt-winters', 'newer-fields']);
  });

  it('an object whose groups are all refused is an empty file promtool accepts', async () => {
    const path = join(workDir, 'empty.yaml');
    writeFileSync(path, renderRuleFile([]));
    expect((await checkRules(path)).code).toBe(0);
  });

  it.each(['rate(x[5m]', 'sum by (job) (', 'foo{bar=}', '1 +', 'up{job="a\\qb"}', 'rates(x[5m])'])(
    'promtool itself refuses the expression %s that the PromQL check keeps out',
    async (expr) => {
      const path = join(workDir, 'bad-promql.yaml');
      writeFileSync(path, yaml.dump({ groups: [{ name: 'g', rules: [{ record: 'r', expr }] }] }));
      const result = await checkRules(path);
      expect(result.output).toContain('could not parse expression');
      expect(result.code).not.toBe(0);
    },
  );

  it('promtool itself refuses what the checks keep out (so the checks are not vacuous)', async () => {
    const path = join(workDir, 'unchecked.yaml');
    writeFileSync(
      path,
      yaml.dump({
        groups: [
          { name: 'g', rules: [{ record: 'r', alert: 'A', expr: 'up' }] },
          { name: 'g', rules: [] },
        ],
      }),
    );
    expect((await checkRules(path)).code).not.toBe(0);
  });
});
