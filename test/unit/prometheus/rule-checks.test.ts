/**
 * PrometheusRule checks as the operator runs them: limits that refuse an object before anything in
 * it is parsed, one check per object generation for every render, bounded memory, and turns of the
 * event loop while a large object is checked.
 */
import yaml from 'js-yaml';
import type { KubeObject } from 'konductor';
import {
  MAX_RULES_PER_NAMESPACE,
  MAX_RULES_PER_OBJECT,
  MAX_RULE_OBJECT_BYTES,
} from '../../../src/handlers/prometheus/rule-limits.js';
import { RuleChecks } from '../../../src/handlers/prometheus/rule-checks.js';
import {
  ALL_GROUPS,
  checkRuleFileSteps,
  renderRuleFile,
  ruleFiles,
  type CheckedRuleFile,
  type PrometheusRuleResource,
  type RuleFormat,
} from '../../../src/handlers/prometheus/rules.js';
import type { PrometheusResource } from '../../../src/handlers/prometheus/types.js';

type Prometheus = PrometheusResource & KubeObject;

const prometheus: Prometheus = {
  apiVersion: 'monitoring.coreos.com/v1',
  kind: 'Prometheus',
  metadata: { name: 'main', namespace: 'monitoring', uid: 'prom-uid' },
  spec: { ruleSelector: {}, ruleNamespaceSelector: {} } as PrometheusResource['spec'],
};
const namespaces = [{ name: 'monitoring' }, { name: 'tenant' }];

function ruleObject(
  name: string,
  rules: unknown[],
  options: { namespace?: string; generation?: number; groups?: number } = {},
): PrometheusRuleResource {
  const groups = options.groups ?? 1;
  const perGroup = Math.ceil(rules.length / groups);
  return {
    metadata: {
      namespace: options.namespace ?? 'monitoring',
      name,
      uid: `${name}-uid`,
      generation: options.generation ?? 1,
    },
    spec: {
      groups: Array.from({ length: groups }, (_, g) => ({
        name: `g${g}`,
        rules: rules.slice(g * perGroup, (g + 1) * perGroup),
      })),
    },
  };
}

/** `count` distinct recording rules that all parse. */
function tinyRules(count: number): unknown[] {
  return Array.from({ length: count }, (_, i) => ({ record: `r${i}`, expr: `m${i} > ${i}` }));
}

/** A check that counts the objects it is asked to check. */
function countingCheck(): {
  checked: string[];
  check: (rule: PrometheusRuleResource, format: RuleFormat) => Generator<void, CheckedRuleFile>;
} {
  const checked: string[] = [];
  return {
    checked,
    check: (rule, format) => {
      checked.push(rule.metadata.name);
      return checkRuleFileSteps(rule, format);
    },
  };
}

describe('limits before parsing', () => {
  it(`a PrometheusRule whose spec is over ${MAX_RULE_OBJECT_BYTES} bytes is refused whole, its broken rules never reported`, () => {
    const broken = Array.from({ length: 600 }, (_, i) => ({
      record: `r${i}`,
      expr: `rate(x[5m] # ${'x'.repeat(1000)}`,
    }));
    const [file] = ruleFiles(prometheus, [ruleObject('huge', broken)], namespaces);
    expect(file?.tooLarge).toBe(true);
    expect(file?.refused).toEqual([
      {
        group: ALL_GROUPS,
        problems: [
          expect.stringContaining(
            'bytes serialized, larger than the 524288 bytes one rule ConfigMap holds',
          ),
        ],
      },
    ]);
  });

  it(`a PrometheusRule of more than ${MAX_RULES_PER_OBJECT} rules is refused whole`, () => {
    const [file] = ruleFiles(
      prometheus,
      [ruleObject('many', tinyRules(MAX_RULES_PER_OBJECT + 1), { groups: 3 })],
      namespaces,
    );
    expect(file?.refused[0]?.problems[0]).toContain(
      `it has ${MAX_RULES_PER_OBJECT + 1} rules, more than the ${MAX_RULES_PER_OBJECT} accepted`,
    );
    expect(file?.content).toBeUndefined();
  });

  it(`past ${MAX_RULES_PER_NAMESPACE} rules in one namespace the later objects are refused, other namespaces keep theirs`, () => {
    const perObject = MAX_RULES_PER_OBJECT;
    const count = MAX_RULES_PER_NAMESPACE / perObject + 1;
    const tenant = Array.from({ length: count }, (_, i) =>
      ruleObject(`t${String(i).padStart(2, '0')}`, tinyRules(perObject), { namespace: 'tenant' }),
    );
    const files = ruleFiles(prometheus, [...tenant, ruleObject('own', tinyRules(3))], namespaces);
    expect(
      files.map(
        (f) =>
          `${f.rule.metadata.namespace}/${f.rule.metadata.name} ${f.content === undefined ? 'refused' : 'kept'}`,
      ),
    ).toEqual([
      'monitoring/own kept',
      ...tenant.map((r, i) => `tenant/${r.metadata.name} ${i < count - 1 ? 'kept' : 'refused'}`),
    ]);
    expect(files.at(-1)?.refused[0]?.problems[0]).toContain(
      `the PrometheusRules of namespace tenant this Prometheus selects would hold more than ${MAX_RULES_PER_NAMESPACE} rules`,
    );
  });
});

describe('RuleChecks', () => {
  it('gives what ruleFiles gives', async () => {
    const rules = [
      ruleObject('a', tinyRules(5)),
      ruleObject('b', [{ record: 'bad', expr: 'rate(' }, ...tinyRules(2)]),
    ];
    const expected = ruleFiles(prometheus, rules, namespaces);
    expect(await new RuleChecks().files(prometheus, rules, namespaces)).toEqual(expected);
  });

  it('checks each object generation once, however many renders follow', async () => {
    const { checked, check } = countingCheck();
    const checks = new RuleChecks({ check });
    const rules = [ruleObject('a', tinyRules(5)), ruleObject('b', tinyRules(5))];
    for (let render = 0; render < 4; render++) await checks.files(prometheus, rules, namespaces);
    expect(checked).toEqual(['a', 'b']);
  });

  it('checks a new generation again', async () => {
    const { checked, check } = countingCheck();
    const checks = new RuleChecks({ check });
    await checks.files(prometheus, [ruleObject('a', tinyRules(5))], namespaces);
    const files = await checks.files(
      prometheus,
      [ruleObject('a', tinyRules(6), { generation: 2 })],
      namespaces,
    );
    expect(checked).toEqual(['a', 'a']);
    expect(files[0]?.content).toContain('record: r5');
  });

  it('never parses an object refused for its size', async () => {
    const { checked, check } = countingCheck();
    const checks = new RuleChecks({ check });
    await checks.files(
      prometheus,
      [ruleObject('many', tinyRules(MAX_RULES_PER_OBJECT + 1))],
      namespaces,
    );
    expect(checked).toEqual([]);
  });

  it('forgets an object once it is gone from the cache', async () => {
    const checks = new RuleChecks();
    await checks.files(
      prometheus,
      [ruleObject('a', tinyRules(5)), ruleObject('b', tinyRules(5))],
      namespaces,
    );
    await checks.files(prometheus, [ruleObject('b', tinyRules(5))], namespaces);
    expect(checks.size).toBe(1);
  });

  it('past its character budget forgets the objects checked longest ago, keeping the latest', async () => {
    const { checked, check } = countingCheck();
    const checks = new RuleChecks({ check, maxChars: 200 });
    const rules = [ruleObject('a', tinyRules(5)), ruleObject('b', tinyRules(5))];
    await checks.files(prometheus, rules, namespaces);
    await checks.files(prometheus, rules, namespaces);
    expect(checks.size).toBe(1);
    expect(checked).toEqual(['a', 'b', 'a', 'b']);
  });

  it('lets other work run while a large object is checked', async () => {
    let tick = 0;
    // Each reading of the clock is a millisecond later: a slice ends after a few rules.
    const checks = new RuleChecks({ sliceMs: 5, now: () => tick++ });
    let otherRan = false;
    setImmediate(() => {
      otherRan = true;
    });
    let ranBeforeDone = false;
    await checks.files(prometheus, [ruleObject('a', tinyRules(200))], namespaces).then(() => {
      ranBeforeDone = otherRan;
    });
    expect(ranBeforeDone).toBe(true);
  });
});

describe('rendering a rule file a group at a time', () => {
  it('gives the same text as dumping all groups at once', () => {
    const groups = [
      {
        name: 'a',
        interval: '1m',
        limit: 3,
        rules: [
          {
            alert: 'A: b',
            expr: 'up == 0\nor vector(1)',
            for: '5m',
            labels: { s: 'p' },
            annotations: { d: '{{ $labels.instance }} is "down"\nline 2' },
          },
        ],
      },
      { name: 'b-#', rules: [{ record: 'r:x', expr: 'sum(rate(x[5m]))' }] },
      { name: "'quoted'", rules: [] },
    ];
    const options = { noArrayIndent: true, lineWidth: -1, noRefs: true, sortKeys: false };
    expect(renderRuleFile(groups)).toBe(yaml.dump({ groups }, options));
    expect(renderRuleFile([])).toBe(yaml.dump({ groups: [] }, options));
  });
});
