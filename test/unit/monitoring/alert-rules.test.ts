/**
 * The alerts of monitoring/konductor-alerts.yaml, proven with the real promtool: the rules load, each
 * alert fires on the series it is about and stays quiet on healthy ones
 * (test/fixtures/monitoring/alert-tests.yaml), and the PrometheusRule that `konductor manifests
 * --monitoring` prints does the same for its own operator and nothing for another.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import {
  MONITORING_FOLDER,
  operatorRules,
  readMonitoringFiles,
  type RuleGroup,
} from '../../../src/cli/commands/monitoring-manifests.js';
import { checkRuleGroups } from '../../../src/handlers/prometheus/rules.js';
import { promtool, scratch } from '../../support/promtool.js';

const rulesFile = `${MONITORING_FOLDER}konductor-alerts.yaml`;
const testsFile = fileURLToPath(
  new URL('../../fixtures/monitoring/alert-tests.yaml', import.meta.url),
);
const runbook = readFileSync(
  fileURLToPath(new URL('../../../docs/running/alerts.md', import.meta.url)),
  'utf8',
);

interface ExpectedAlert {
  exp_labels?: Record<string, string>;
  exp_annotations?: Record<string, string>;
}
interface AlertRuleTest {
  eval_time: string;
  alertname: string;
  exp_alerts: ExpectedAlert[];
}
interface UnitTest {
  name: string;
  input_series: Array<{ series: string; values: string }>;
  alert_rule_test: AlertRuleTest[];
}
interface UnitTestFile {
  rule_files: string[];
  tests: UnitTest[];
}

const { groups } = readMonitoringFiles();
const alerts = groups.flatMap((group) => group.rules);
const unitTests = load(readFileSync(testsFile, 'utf8')) as UnitTestFile;
/** The operator the fixture's series belong to. */
const OPERATOR = { namespace: 'ops', job: 'demo' };

/** The fixture's tests run against other rules, with each test changed by `change`. */
function testsAgainst(rules: RuleGroup[], change: (test: UnitTest) => UnitTest) {
  const files = scratch();
  const rulesPath = files.write('rules.yaml', { groups: rules });
  const testsPath = files.write('tests.yaml', {
    ...unitTests,
    rule_files: [rulesPath],
    tests: unitTests.tests.map(change),
  });
  return promtool(['test', 'rules', testsPath]).finally(() => files.remove());
}

/** GitHub's anchor of a Markdown heading. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\- ]/g, '')
    .replace(/ /g, '-');
}

describe("the operator's alerts", () => {
  test('promtool check rules loads every alert of monitoring/konductor-alerts.yaml', async () => {
    const result = await promtool(['check', 'rules', rulesFile]);
    expect(result.output).toContain(`SUCCESS: ${alerts.length} rules found`);
    expect(result.code).toBe(0);
  });

  test('promtool test rules passes: each alert fires on its series and stays quiet on healthy ones', async () => {
    const result = await promtool(['test', 'rules', testsFile]);
    expect(result.output).toContain('SUCCESS');
    expect(result.code).toBe(0);
  });

  test.each(alerts.map((rule) => rule.alert))(
    '%s has a unit test where it fires and an evaluation where it does not',
    (alertname) => {
      const evaluations = unitTests.tests
        .flatMap((test) => test.alert_rule_test)
        .filter((evaluation) => evaluation.alertname === alertname);
      expect(evaluations.some((evaluation) => evaluation.exp_alerts.length > 0)).toBe(true);
      expect(evaluations.some((evaluation) => evaluation.exp_alerts.length === 0)).toBe(true);
    },
  );

  test.each(alerts.map((rule) => [rule.alert, rule] as const))(
    '%s has a severity, a for duration, a summary, a description and a runbook_url to its section of docs/running/alerts.md',
    (alertname, rule) => {
      expect(['warning', 'critical']).toContain(rule.labels?.severity);
      expect(rule.for).toMatch(/^\d+m$/);
      expect(rule.annotations?.summary).toBeTruthy();
      expect(rule.annotations?.description).toBeTruthy();
      const headings = [...runbook.matchAll(/^## (.+)$/gm)].map((match) => anchor(match[1]!));
      expect(headings).toContain(alertname.toLowerCase());
      expect(rule.annotations?.runbook_url).toMatch(
        new RegExp(`^docs/running/alerts\\.md#${alertname.toLowerCase()}$`),
      );
    },
  );

  test('the rules of one operator (as konductor manifests --monitoring prints them) pass promtool check rules', async () => {
    const files = scratch();
    try {
      const path = files.write('rules.yaml', { groups: operatorRules(groups, OPERATOR) });
      const result = await promtool(['check', 'rules', path]);
      expect(result.output).toContain(`SUCCESS: ${alerts.length} rules found`);
    } finally {
      files.remove();
    }
  });

  test("the rules of one operator fire as the shipped ones do on that operator's series", async () => {
    // absent() knows no labels but its selector's: scoped, the alert carries the operator's.
    const result = await testsAgainst(operatorRules(groups, OPERATOR), (test) => ({
      ...test,
      alert_rule_test: test.alert_rule_test.map((evaluation) => ({
        ...evaluation,
        exp_alerts: evaluation.exp_alerts.map((alert) =>
          alert.exp_labels?.job === undefined
            ? {
                exp_labels: { ...alert.exp_labels, ...OPERATOR },
                exp_annotations: {
                  ...alert.exp_annotations,
                  summary: 'No replica of the operator ops/demo leads.',
                  description:
                    'No replica of ops/demo reports konductor_leader 1, or none is scraped: no handler runs, and changes are not handled.',
                },
              }
            : alert,
        ),
      })),
    }));
    expect(result.output).toContain('SUCCESS');
    expect(result.code).toBe(0);
  });

  test("the rules of one operator stay quiet on another operator's series", async () => {
    // KonductorNoLeader is left out: the operator's own leader is absent from these series, so it fires.
    const result = await testsAgainst(operatorRules(groups, OPERATOR), (test) => ({
      ...test,
      input_series: test.input_series.map((input) => ({
        ...input,
        series: input.series.replace('job="demo"', 'job="other"'),
      })),
      alert_rule_test: test.alert_rule_test
        .filter((evaluation) => evaluation.alertname !== 'KonductorNoLeader')
        .map((evaluation) => ({ ...evaluation, exp_alerts: [] })),
    }));
    expect(result.output).toContain('SUCCESS');
    expect(result.code).toBe(0);
  });

  test('the bundled Prometheus operator loads every group of the PrometheusRule', () => {
    const { groups: loaded, refused } = checkRuleGroups({
      metadata: { name: 'demo-alerts', namespace: 'ops' },
      spec: { groups: operatorRules(groups, OPERATOR) },
    });
    expect(refused).toEqual([]);
    expect(loaded.flatMap((group) => group.rules.map((rule) => rule.alert))).toEqual(
      alerts.map((rule) => rule.alert),
    );
  });
});
