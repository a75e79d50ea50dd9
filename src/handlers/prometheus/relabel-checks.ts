/**
 * The checks Prometheus makes when it loads relabel rules (`model/relabel`), on a monitor's
 * camelCase relabelings and on the generated snake_case rules, so that nothing it would refuse
 * is ever written.
 */
import { regexProblem } from './regex.js';
import type { RelabelConfig, RelabelRule } from './types.js';

/** Relabel actions Prometheus (≥ 2.41) accepts, lower-case; monitors may use any case. */
export const RELABEL_ACTIONS: readonly string[] = [
  'replace',
  'keep',
  'drop',
  'hashmod',
  'labelmap',
  'labeldrop',
  'labelkeep',
  'lowercase',
  'uppercase',
  'keepequal',
  'dropequal',
];

const DEFAULT_SEPARATOR = ';';
const DEFAULT_REPLACEMENT = '$1';
const DEFAULT_REGEX = '(.*)';
/** Prometheus' legacy (pre-UTF-8) label name rule, which the 2.x line validates against. */
export const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
/** Prometheus' `relabelTarget`: a label name that may contain `$1` / `${name}` references. */
const RELABEL_TARGET = /^(?:(?:[a-zA-Z_]|\$(?:\{\w+\}|\w+))+\w*)+$/;

/** A regex as quoted in a problem: at most 64 characters of it, so an Event never carries kilobytes. */
export function quoteRegex(regex: string): string {
  return regex.length <= 64 ? regex : `${regex.slice(0, 60)}…`;
}

/** The checks Prometheus applies when loading a relabel config, on a monitor's `relabelings` entry. */
export function relabelProblems(rc: RelabelConfig, field: string): string[] {
  const problems: string[] = [];
  const rawAction = rc.action ?? '';
  const action = rawAction === '' ? 'replace' : rawAction.toLowerCase();
  if (!RELABEL_ACTIONS.includes(action)) {
    problems.push(
      `${field}.action: invalid action "${rawAction}" (allowed: ${RELABEL_ACTIONS.join(', ')}, any case)`,
    );
    return problems;
  }
  (rc.sourceLabels ?? []).forEach((label, i) => {
    if (!LABEL_NAME.test(label))
      problems.push(`${field}.sourceLabels[${i}]: "${label}" is not a valid label name`);
  });
  if (rc.regex !== undefined) {
    const why = regexProblem(String(rc.regex));
    if (why !== undefined)
      problems.push(`${field}.regex: "${quoteRegex(String(rc.regex))}" ${why}`);
  }
  if (rc.modulus !== undefined && (!Number.isInteger(rc.modulus) || rc.modulus < 0)) {
    problems.push(`${field}.modulus: must be a non-negative integer`);
  }
  const target = rc.targetLabel ?? '';
  const replacement = rc.replacement ?? DEFAULT_REPLACEMENT;
  const separator = rc.separator ?? DEFAULT_SEPARATOR;
  const regex = rc.regex ?? '';
  const modulus = rc.modulus ?? 0;

  if (action === 'hashmod' && modulus === 0)
    problems.push(`${field}.modulus: required (non-zero) for action hashmod`);
  const needsTarget = ['replace', 'hashmod', 'lowercase', 'uppercase', 'keepequal', 'dropequal'];
  if (needsTarget.includes(action)) {
    if (target === '') {
      problems.push(`${field}.targetLabel: required for action ${action}`);
    } else if (action === 'hashmod' ? !LABEL_NAME.test(target) : !RELABEL_TARGET.test(target)) {
      problems.push(`${field}.targetLabel: "${target}" is invalid for action ${action}`);
    }
  }
  if (['lowercase', 'uppercase'].includes(action) && replacement !== DEFAULT_REPLACEMENT) {
    problems.push(`${field}.replacement: cannot be set for action ${action}`);
  }
  if (action === 'labelmap' && !RELABEL_TARGET.test(replacement)) {
    problems.push(`${field}.replacement: "${replacement}" is invalid for action labelmap`);
  }
  if (
    ['keepequal', 'dropequal'].includes(action) &&
    ((regex !== '' && regex !== DEFAULT_REGEX) ||
      modulus !== 0 ||
      separator !== DEFAULT_SEPARATOR ||
      replacement !== DEFAULT_REPLACEMENT)
  ) {
    problems.push(`${field}: action ${action} takes only sourceLabels and targetLabel`);
  }
  if (
    ['labeldrop', 'labelkeep'].includes(action) &&
    ((rc.sourceLabels ?? []).length > 0 ||
      target !== '' ||
      modulus !== 0 ||
      separator !== DEFAULT_SEPARATOR ||
      replacement !== DEFAULT_REPLACEMENT)
  ) {
    problems.push(`${field}: action ${action} takes only regex`);
  }
  return problems;
}

/** What Prometheus would refuse in one generated rule (regex, label names), named by `field`. */
export function ruleProblems(rule: RelabelRule, field: string): string[] {
  const problems: string[] = [];
  if (rule.regex !== undefined) {
    const why = regexProblem(String(rule.regex));
    if (why !== undefined)
      problems.push(`${field}.regex: ${JSON.stringify(quoteRegex(String(rule.regex)))} ${why}`);
  }
  (rule.source_labels ?? []).forEach((label) => {
    if (!LABEL_NAME.test(label))
      problems.push(`${field}.source_labels: ${JSON.stringify(label)} is not a valid label name`);
  });
  // Prometheus checks target_label only for the actions that write it.
  const action = rule.action ?? 'replace';
  const writes = [
    'replace',
    'lowercase',
    'uppercase',
    'keepequal',
    'dropequal',
    'hashmod',
  ].includes(action);
  if (
    writes &&
    rule.target_label !== undefined &&
    !(action === 'hashmod' ? LABEL_NAME : RELABEL_TARGET).test(rule.target_label)
  ) {
    problems.push(
      `${field}.target_label: ${JSON.stringify(rule.target_label)} is not a valid label name`,
    );
  }
  return problems;
}
