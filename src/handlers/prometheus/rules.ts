/**
 * PrometheusRule objects as Prometheus rule files: which ones a Prometheus selects, which of their
 * groups Prometheus would load, and the YAML of each file. Pure functions: callers pass in what
 * they listed. Every field is read as untrusted input: a group Prometheus would refuse is left out
 * (and reported), so one tenant's mistake never keeps the other rules, or the configuration, from
 * loading.
 */
import yaml from 'js-yaml';
import { MAX_RULE_CONFIGMAP_BYTES } from './children.js';
import { parseDuration } from './config.js';
import { atLeast, prometheusVersion } from './prometheus-version.js';
import { promqlProblem } from './promql-syntax.js';
import { limitProblems, ruleSize } from './rule-limits.js';
import { compareStrings, matchesSelector } from './selectors.js';
import type { LabelSelector, NamespaceInfo, PrometheusResource } from './types.js';
import { isPlainObject } from '../common/plain-object.js';

/** A `PrometheusRule` object as listed; `spec` is read field by field, never trusted. */
export interface PrometheusRuleResource {
  metadata: {
    name: string;
    namespace: string;
    uid?: string;
    generation?: number;
    labels?: Record<string, string>;
  };
  spec?: unknown;
}

/** The Prometheus fields that choose PrometheusRules (typed here until every CRD version has them). */
export interface RuleSelection {
  /** `null`/absent selects no PrometheusRule and emits no `rule_files`; `{}` selects all. */
  ruleSelector?: LabelSelector | null;
  /** `null`/absent: only the Prometheus object's own namespace; `{}`: all namespaces. */
  ruleNamespaceSelector?: LabelSelector | null;
}

/** One rule as written to the file (snake_case, in Prometheus' key order). */
export interface RenderedRule {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  keep_firing_for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** One rule group as written to the file. */
export interface RenderedGroup {
  name: string;
  interval?: string;
  limit?: number;
  /** Added to every rule of the group; Prometheus 3 and later only. */
  labels?: Record<string, string>;
  rules: RenderedRule[];
}

/** What the deployed Prometheus can load beyond the 2.x rule file format. */
export interface RuleFormat {
  /** A group's `labels` (Prometheus ≥ 3.0.0); older versions refuse the whole file over it, so it is left out. */
  groupLabels: boolean;
  /** PromQL's `holt_winters` function (Prometheus < 3.0.0; 3.0 removed it). */
  holtWinters: boolean;
}

const PROMETHEUS_2: RuleFormat = { groupLabels: false, holtWinters: true };

/** The rule file format of the Prometheus version `prometheus` deploys. */
export function ruleFormat(prometheus: PrometheusResource): RuleFormat {
  const three = atLeast(prometheusVersion(prometheus.spec), 3, 0);
  return { groupLabels: three, holtWinters: !three };
}

/** A group left out of a rule file, and why; `group` is its name, or `groups[<i>]` when it has none. */
export interface RefusedGroup {
  group: string;
  problems: string[];
}

/** What one selected PrometheusRule becomes. */
export interface CheckedRuleFile {
  rule: PrometheusRuleResource;
  /** The ConfigMap key, upstream's `<namespace>-<name>-<uid>.yaml`; absent when the whole object is refused. */
  key?: string;
  /** The file's YAML (`groups:` with the loadable groups only); absent when the whole object is refused. */
  content?: string;
  /** Groups left out; `(all groups)` when the whole object is refused. */
  refused: RefusedGroup[];
  /** Set when the whole object is refused for its size (or its namespace's rule count), not for what it says. */
  tooLarge?: boolean;
}

/** ConfigMap keys are at most 253 characters. */
const MAX_KEY = 253;
/** Prometheus 2.x metric names (recording rules) and label names. */
const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
/** Shown instead of a group name when the whole PrometheusRule is refused. */
export const ALL_GROUPS = '(all groups)';

function describe(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'a list' : typeof value;
}

/** `<namespace>/<name>`. */
export function ruleKey(rule: PrometheusRuleResource): string {
  return `${rule.metadata.namespace}/${rule.metadata.name}`;
}

/**
 * The PrometheusRules `prometheus` selects: `ruleSelector` `null`/absent selects none; those in its
 * own namespace when `ruleNamespaceSelector` is `null`/absent, else in the namespaces whose labels
 * match it. Sorted by `<namespace>/<name>`; a repeated key keeps its first occurrence.
 */
export function selectRules(
  prometheus: PrometheusResource,
  rules: readonly PrometheusRuleResource[],
  namespaces: readonly NamespaceInfo[],
): PrometheusRuleResource[] {
  const spec = prometheus.spec as RuleSelection;
  if (spec.ruleSelector == null) return [];
  const inScope =
    spec.ruleNamespaceSelector == null
      ? new Set([prometheus.metadata.namespace])
      : new Set(
          namespaces
            .filter((ns) => matchesSelector(spec.ruleNamespaceSelector, ns.labels))
            .map((ns) => ns.name),
        );
  const byKey = new Map<string, PrometheusRuleResource>();
  for (const rule of rules) {
    if (
      !inScope.has(rule.metadata.namespace) ||
      !matchesSelector(spec.ruleSelector, rule.metadata.labels)
    )
      continue;
    if (!byKey.has(ruleKey(rule))) byKey.set(ruleKey(rule), rule);
  }
  return [...byKey.keys()]
    .sort(compareStrings)
    .map((key) => byKey.get(key) as PrometheusRuleResource);
}

function durationProblem(value: unknown, field: string): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string')
    return `${field} must be a duration string (e.g. 5m), not ${describe(value)}`;
  return parseDuration(value) === undefined
    ? `${field} "${value}" is not a valid duration (e.g. 30s, 5m, 1h30m)`
    : undefined;
}

/** Label and annotation values are Go templates in Prometheus: an unclosed `{{` makes the file unloadable. */
function templateProblem(value: string, field: string): string | undefined {
  let at = value.indexOf('{{');
  while (at >= 0) {
    const close = value.indexOf('}}', at + 2);
    if (close < 0) return `${field} has a "{{" without "}}"`;
    at = value.indexOf('{{', close + 2);
  }
  return undefined;
}

/** Checks a `labels`/`annotations` map, returning the copy to render (only string values). */
function stringMap(
  value: unknown,
  field: string,
  problems: string[],
  recording: boolean,
): Record<string, string> | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isPlainObject(value)) {
    problems.push(`${field} must be a map of strings, not ${describe(value)}`);
    return undefined;
  }
  const out: Record<string, string> = {};
  for (const key of Object.keys(value).sort(compareStrings)) {
    const item = value[key];
    if (!LABEL_NAME.test(key))
      problems.push(`${field} name "${key}" is not a valid label name ([a-zA-Z_][a-zA-Z0-9_]*)`);
    else if (recording && key === '__name__')
      problems.push(`${field} must not set __name__ in a recording rule`);
    if (typeof item !== 'string') {
      problems.push(`${field}.${key} must be a string, not ${describe(item)}`);
      continue;
    }
    const template = recording ? undefined : templateProblem(item, `${field}.${key}`);
    if (template) problems.push(template);
    out[key] = item;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** One rule: its problems (prefixed with `rules[<i>]`), and what to render when there are none. */
function checkRule(
  value: unknown,
  at: string,
  problems: string[],
  format: RuleFormat,
): RenderedRule | undefined {
  if (!isPlainObject(value)) {
    problems.push(`${at} must be an object, not ${describe(value)}`);
    return undefined;
  }
  const before = problems.length;
  const { record, alert, expr } = value;
  const hasRecord = record !== undefined && record !== null && record !== '';
  const hasAlert = alert !== undefined && alert !== null && alert !== '';
  if (hasRecord === hasAlert) problems.push(`${at} must have exactly one of record and alert`);
  if (hasRecord && (typeof record !== 'string' || !METRIC_NAME.test(record))) {
    problems.push(
      `${at}.record ${JSON.stringify(record)} is not a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)`,
    );
  }
  if (hasAlert && typeof alert !== 'string')
    problems.push(`${at}.alert must be a string, not ${describe(alert)}`);
  let text: string | undefined;
  // The CRD types expr as int-or-string, as upstream does: an integer is a valid PromQL expression.
  if (typeof expr === 'string') text = expr;
  else if (typeof expr === 'number' && Number.isSafeInteger(expr)) text = String(expr);
  else problems.push(`${at}.expr must be a PromQL string, not ${describe(expr)}`);
  const exprIssue = text === undefined ? undefined : promqlProblem(text, format);
  if (exprIssue) {
    const named = hasRecord
      ? `record ${JSON.stringify(record)}`
      : hasAlert
        ? `alert ${JSON.stringify(alert)}`
        : undefined;
    problems.push(`${at}${named ? ` (${named})` : ''}.expr ${exprIssue}`);
  }
  const recording = hasRecord && !hasAlert;
  for (const field of ['for', 'keep_firing_for', 'annotations'] as const) {
    if (recording && value[field] !== undefined && value[field] !== null && value[field] !== '') {
      problems.push(`${at}.${field} is only allowed on alerting rules`);
    }
  }
  const forProblem = durationProblem(value.for, `${at}.for`);
  if (forProblem) problems.push(forProblem);
  const keepProblem = durationProblem(value.keep_firing_for, `${at}.keep_firing_for`);
  if (keepProblem) problems.push(keepProblem);
  const labels = stringMap(value.labels, `${at}.labels`, problems, recording);
  const annotations = stringMap(value.annotations, `${at}.annotations`, problems, false);
  if (problems.length > before || text === undefined) return undefined;
  return {
    ...(recording ? { record: record as string } : { alert: alert as string }),
    expr: text,
    ...(!recording && typeof value.for === 'string' && value.for !== '' ? { for: value.for } : {}),
    ...(!recording && typeof value.keep_firing_for === 'string' && value.keep_firing_for !== ''
      ? { keep_firing_for: value.keep_firing_for }
      : {}),
    ...(labels ? { labels } : {}),
    ...(annotations ? { annotations } : {}),
  };
}

/**
 * One group: its problems, and what to render when there are none. Fields the deployed Prometheus
 * does not know (a group's `labels` before 3.0, `query_offset`) are not written, so the file loads.
 * Pauses after each rule, so a caller can yield to the event loop (see rule-checks.ts).
 */
function* checkGroup(
  value: unknown,
  format: RuleFormat,
): Generator<void, { name: string; group?: RenderedGroup; problems: string[] }> {
  if (!isPlainObject(value))
    return { name: '', problems: [`must be an object, not ${describe(value)}`] };
  const problems: string[] = [];
  const name = typeof value.name === 'string' ? value.name : '';
  if (name === '') problems.push('name is missing: every rule group needs a name');
  const interval = durationProblem(value.interval, 'interval');
  if (interval) problems.push(interval);
  const { limit } = value;
  if (
    limit !== undefined &&
    limit !== null &&
    !(typeof limit === 'number' && Number.isSafeInteger(limit) && limit >= 0)
  ) {
    problems.push(`limit must be a non-negative integer, not ${JSON.stringify(limit)}`);
  }
  const labels = format.groupLabels ? stringMap(value.labels, 'labels', problems, true) : undefined;
  const rules: RenderedRule[] = [];
  if (value.rules !== undefined && value.rules !== null && !Array.isArray(value.rules)) {
    problems.push(`rules must be a list, not ${describe(value.rules)}`);
  } else {
    const listed = (value.rules as unknown[] | undefined) ?? [];
    for (let i = 0; i < listed.length; i++) {
      const rendered = checkRule(listed[i], `rules[${i}]`, problems, format);
      if (rendered) rules.push(rendered);
      yield;
    }
  }
  if (problems.length > 0) return { name, problems };
  return {
    name,
    problems,
    group: {
      name,
      ...(typeof value.interval === 'string' && value.interval !== ''
        ? { interval: value.interval }
        : {}),
      ...(typeof limit === 'number' ? { limit } : {}),
      ...(labels ? { labels } : {}),
      rules,
    },
  };
}

/**
 * The groups of one PrometheusRule that Prometheus would load, and the ones it would refuse: a
 * group without a name, a repeated group name (the first keeps it), a rule with neither or both of
 * `record` and `alert`, an unparseable duration, an `expr` that is not PromQL Prometheus would parse
 * (see promql-syntax.ts), a bad label.
 */
export function checkRuleGroups(
  rule: PrometheusRuleResource,
  format: RuleFormat = PROMETHEUS_2,
): { groups: RenderedGroup[]; refused: RefusedGroup[] } {
  return runToEnd(checkRuleGroupsSteps(rule, format));
}

/** {@link checkRuleGroups} one rule at a time: the generator pauses after each rule. */
export function* checkRuleGroupsSteps(
  rule: PrometheusRuleResource,
  format: RuleFormat = PROMETHEUS_2,
): Generator<void, { groups: RenderedGroup[]; refused: RefusedGroup[] }> {
  const spec = rule.spec;
  const groupsValue = isPlainObject(spec) ? spec.groups : undefined;
  if (groupsValue === undefined || groupsValue === null) return { groups: [], refused: [] };
  if (!Array.isArray(groupsValue))
    return {
      groups: [],
      refused: [
        {
          group: ALL_GROUPS,
          problems: [`spec.groups must be a list, not ${describe(groupsValue)}`],
        },
      ],
    };
  const groups: RenderedGroup[] = [];
  const refused: RefusedGroup[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < groupsValue.length; i++) {
    const checked = yield* checkGroup(groupsValue[i], format);
    const label = checked.name === '' ? `groups[${i}]` : checked.name;
    const problems = [...checked.problems];
    if (checked.name !== '' && seen.has(checked.name))
      problems.push(
        `the group name "${checked.name}" is used by an earlier group of this PrometheusRule`,
      );
    if (checked.name !== '') seen.add(checked.name);
    if (problems.length > 0 || !checked.group) refused.push({ group: label, problems });
    else groups.push(checked.group);
  }
  return { groups, refused };
}

/** Runs a generator of pauses to its end, without pausing. */
export function runToEnd<T>(steps: Generator<void, T>): T {
  for (;;) {
    const next = steps.next();
    if (next.done === true) return next.value;
  }
}

const DUMP_OPTIONS: yaml.DumpOptions = {
  noArrayIndent: true,
  lineWidth: -1,
  noRefs: true,
  sortKeys: false,
};

/** A rule file's YAML: `groups:` and the given groups. */
export function renderRuleFile(groups: readonly RenderedGroup[]): string {
  return runToEnd(renderRuleFileSteps(groups));
}

/**
 * {@link renderRuleFile} one group at a time, pausing after each: the text of `groups:` followed by
 * each group dumped as a one-item list is the text of the whole dump.
 */
export function* renderRuleFileSteps(groups: readonly RenderedGroup[]): Generator<void, string> {
  if (groups.length === 0) return yaml.dump({ groups: [] }, DUMP_OPTIONS);
  let text = 'groups:\n';
  for (const group of groups) {
    text += yaml.dump([group], DUMP_OPTIONS);
    yield;
  }
  return text;
}

/** A PrometheusRule refused as a whole, for `problem`. */
export function refusedWhole(
  rule: PrometheusRuleResource,
  problem: string,
  tooLarge = true,
): CheckedRuleFile {
  return {
    rule,
    refused: [{ group: ALL_GROUPS, problems: [problem] }],
    ...(tooLarge ? { tooLarge } : {}),
  };
}

/**
 * One PrometheusRule checked and rendered: its file (the loadable groups) under upstream's key
 * `<namespace>-<name>-<uid>.yaml`, and what was left out. An object whose file would not fit one
 * ConfigMap, or whose key would be too long, is refused as a whole. Pauses after each rule (see
 * {@link checkRuleGroupsSteps}); the size limits of rule-limits.ts come before this, not in it.
 */
export function* checkRuleFileSteps(
  rule: PrometheusRuleResource,
  format: RuleFormat,
): Generator<void, CheckedRuleFile> {
  const key = `${rule.metadata.namespace}-${rule.metadata.name}-${rule.metadata.uid ?? ''}.yaml`;
  if (key.length > MAX_KEY) {
    return refusedWhole(
      rule,
      `the rule file name ${key} is longer than the ${MAX_KEY} characters a ConfigMap key may have: shorten the PrometheusRule's name`,
      false,
    );
  }
  const { groups, refused } = yield* checkRuleGroupsSteps(rule, format);
  const content = yield* renderRuleFileSteps(groups);
  if (Buffer.byteLength(key) + Buffer.byteLength(content) > MAX_RULE_CONFIGMAP_BYTES) {
    return refusedWhole(
      rule,
      `the rendered rule file is larger than ${MAX_RULE_CONFIGMAP_BYTES} bytes, more than one ConfigMap holds: split the PrometheusRule`,
    );
  }
  return { rule, key, content, refused };
}

/**
 * Every PrometheusRule `prometheus` selects, checked and rendered (see {@link checkRuleFileSteps}),
 * after the limits of rule-limits.ts, which refuse an object before anything in it is parsed. The
 * operator goes through `RuleChecks` (rule-checks.ts) instead: the same results, remembered per
 * object generation and computed without blocking the event loop.
 */
export function ruleFiles(
  prometheus: PrometheusResource,
  rules: readonly PrometheusRuleResource[],
  namespaces: readonly NamespaceInfo[],
): CheckedRuleFile[] {
  const format = ruleFormat(prometheus);
  const selected = selectRules(prometheus, rules, namespaces);
  const limits = limitProblems(selected, selected.map(ruleSize));
  return selected.map((rule, i) => {
    const problem = limits[i];
    return problem === undefined
      ? runToEnd(checkRuleFileSteps(rule, format))
      : refusedWhole(rule, problem);
  });
}
