/**
 * The PromQL check agrees with the real Prometheus parser (`promtool check rules`, 2.42 as
 * `npm run provision` installs it) on what it accepts and what it refuses, and stays bounded on
 * hostile input.
 */
import { promtool } from '../../support/promtool.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { MAX_NESTING, promqlProblem } from '../../../src/handlers/prometheus/promql-syntax.js';

const PROMETHEUS_2 = { holtWinters: true };

/** Expressions Prometheus 2.42 parses. */
const ACCEPTED = [
  'up',
  'sum by (instance) (rate(node_cpu_seconds_total{mode!="idle"}[5m]))',
  'histogram_quantile(0.9, sum by (le) (rate(h_bucket[5m])))',
  'up == on (job) group_left (team) team_info',
  'x[5m:1m] offset 1h @ end()',
  'max_over_time(deriv(rate(x[1m])[5m:1m])[1h:])',
  'label_replace(up, "a", "$1", "b", "(.*)")',
  'up{job="a(b"} # a comment with ( in it\n+ 1',
  'x{a=\'single\',b=`raw \\q`,c="\\u00e9\\x41\\101\\n"}',
  'sum without () (up) > bool 0',
  'topk(5, x) without (a)',
  'holt_winters(x[1h], 0.5, 0.5)',
  '-x offset -5m',
  '0x1f + 1e3 + Inf - NaN',
  'sum(x) by (a) / on (a) group_left sum(y) by (a)',
  'absent(nonexistent{job="myjob"})',
  'up{job=~"api|web", instance!~`10\\.0\\..*`}',
  'up{job=~"a\\\\(b"}',
];

/** Expressions Prometheus 2.42 refuses ("could not parse expression"). */
const REFUSED = [
  'rate(x[5m]',
  'sum by (job) (',
  'foo{bar=}',
  '1 +',
  'foo bar',
  'rates(x[5m])',
  'up{job="a\\qb"}',
  'up{job="a\nb"}',
  'up{job="unclosed}',
  'x{a="\\777"}',
  'sum(\n  rate(x[5m])\n  by (job)',
  '# only a comment',
  'up{job=~"a(b"}',
  'sum(rate(x{path!~"[z-a]"}[5m]))',
];

describe('agreement with the real Prometheus parser', () => {
  let workDir = '';
  beforeAll(() => {
    workDir = mkdtempSync(join(tmpdir(), 'konductor-promql-'));
  });
  afterAll(() => {
    rmSync(workDir, { recursive: true, force: true });
  });

  /** `promtool check rules` on one recording rule with `expr`: exit code and output. */
  function promtoolCheck(expr: string): Promise<{ code: number; output: string }> {
    const path = join(workDir, 'rule.yaml');
    writeFileSync(path, yaml.dump({ groups: [{ name: 'g', rules: [{ record: 'r', expr }] }] }));
    return promtool(['check', 'rules', path]);
  }

  it.each(ACCEPTED)('accepts %j, as Prometheus does', async (expr) => {
    expect(promqlProblem(expr, PROMETHEUS_2)).toBeUndefined();
    expect((await promtoolCheck(expr)).code).toBe(0);
  });

  it.each(REFUSED)('refuses %j, as Prometheus does', async (expr) => {
    expect(promqlProblem(expr, PROMETHEUS_2)).toMatch(/line \d+, column \d+/);
    const result = await promtoolCheck(expr);
    expect(result.output).toContain('could not parse expression');
    expect(result.code).not.toBe(0);
  });
});

describe('bounds on hostile expressions', () => {
  it(`refuses brackets nested more than ${MAX_NESTING} deep before parsing, naming where`, () => {
    expect(
      promqlProblem(
        `${'sum('.repeat(MAX_NESTING + 1)}x${')'.repeat(MAX_NESTING + 1)}`,
        PROMETHEUS_2,
      ),
    ).toBe(
      `nests brackets more than ${MAX_NESTING} deep (at line 1, column ${4 * MAX_NESTING + 4})`,
    );
  });

  it(`accepts brackets nested ${MAX_NESTING} deep`, () => {
    expect(
      promqlProblem(`${'sum('.repeat(MAX_NESTING)}x${')'.repeat(MAX_NESTING)}`, PROMETHEUS_2),
    ).toBeUndefined();
  });

  it('brackets inside strings and comments do not count towards the nesting', () => {
    expect(
      promqlProblem(
        `up{job="${'('.repeat(MAX_NESTING + 1)}"} # ${'['.repeat(MAX_NESTING + 1)}`,
        PROMETHEUS_2,
      ),
    ).toBeUndefined();
  });

  it('a long run of garbage is refused at its first character, without error recovery', () => {
    expect(promqlProblem(')]}{'.repeat(16_000), PROMETHEUS_2)).toBe(
      'does not parse at line 1, column 1: unexpected ")"',
    );
  });
});
