/**
 * The limits a PrometheusRule meets before anything in it is parsed: its serialized size, its rule
 * count, and the rules of its namespace that one Prometheus takes. Counting is cheap and parsing
 * PromQL is not, so an object over a limit costs one measurement, never a parse.
 */
import { MAX_RULE_CONFIGMAP_BYTES } from './children.js';
import type { PrometheusRuleResource } from './rules.js';
import { isPlainObject } from '../common/plain-object.js';

/** A PrometheusRule's `spec`, serialized as JSON, may be at most this many bytes: one rule ConfigMap's budget. */
export const MAX_RULE_OBJECT_BYTES = MAX_RULE_CONFIGMAP_BYTES;
/** Rules in one PrometheusRule, over all its groups. */
export const MAX_RULES_PER_OBJECT = 2_000;
/** Rules one Prometheus takes from the PrometheusRules of one namespace, over all of them. */
export const MAX_RULES_PER_NAMESPACE = 10_000;

/** What the limits look at. */
export interface RuleSize {
  /** `spec` serialized as JSON, in UTF-8 bytes. */
  bytes: number;
  /** Entries of every group's `rules` list (whatever they hold). */
  rules: number;
}

/** Measures a PrometheusRule without looking inside its rules. */
export function ruleSize(rule: PrometheusRuleResource): RuleSize {
  const bytes = Buffer.byteLength(JSON.stringify(rule.spec ?? null) ?? '');
  const groups =
    isPlainObject(rule.spec) && Array.isArray(rule.spec.groups)
      ? (rule.spec.groups as unknown[])
      : [];
  const rules = groups.reduce<number>(
    (sum, group) =>
      sum + (isPlainObject(group) && Array.isArray(group.rules) ? group.rules.length : 0),
    0,
  );
  return { bytes, rules };
}

/** Why one PrometheusRule is refused whole by its own size, or `undefined`. */
export function objectLimitProblem(size: RuleSize): string | undefined {
  if (size.bytes > MAX_RULE_OBJECT_BYTES) {
    return `its spec is ${size.bytes} bytes serialized, larger than the ${MAX_RULE_OBJECT_BYTES} bytes one rule ConfigMap holds: split the PrometheusRule (nothing in it was parsed)`;
  }
  if (size.rules > MAX_RULES_PER_OBJECT) {
    return `it has ${size.rules} rules, more than the ${MAX_RULES_PER_OBJECT} accepted in one PrometheusRule: split it (nothing in it was parsed)`;
  }
  return undefined;
}

/**
 * Why each selected PrometheusRule is refused before parsing, by position: its own size, or its
 * namespace's rule budget, which the objects take in the given (sorted) order, so the earlier ones
 * keep their rules and the first that would overflow it, and any after, are refused.
 */
export function limitProblems(
  rules: readonly PrometheusRuleResource[],
  sizes: readonly RuleSize[],
): Array<string | undefined> {
  const used = new Map<string, number>();
  return rules.map((rule, i) => {
    const size = sizes[i] as RuleSize;
    const own = objectLimitProblem(size);
    if (own !== undefined) return own;
    const namespace = rule.metadata.namespace;
    const before = used.get(namespace) ?? 0;
    if (before + size.rules > MAX_RULES_PER_NAMESPACE) {
      return `with its ${size.rules} rules, the PrometheusRules of namespace ${namespace} this Prometheus selects would hold more than ${MAX_RULES_PER_NAMESPACE} rules (${before} before it): split them over fewer, smaller objects or select fewer (nothing in it was parsed)`;
    }
    used.set(namespace, before + size.rules);
    return undefined;
  });
}
