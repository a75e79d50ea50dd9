/**
 * Whether each ServiceMonitor, PodMonitor and PrometheusRule made it into the Prometheus that selects
 * it, in the status shape prometheus-operator gives them (`status.bindings`, one per selecting
 * Prometheus, each with an `Accepted` condition in the `metav1.Condition` shape). "My ServiceMonitor is
 * not picked up" is upstream's commonest question: with this, `kubectl get servicemonitors` answers it.
 * Pure decisions only; the writes are in `acceptance-writer.ts`.
 */
import { sameJson } from '../common/same-json.js';
import type { LeftOutMonitor } from './config-budget.js';
import { ALL_GROUPS, type CheckedRuleFile } from './rules.js';
import type { SkippedMonitor } from './types.js';

/** The monitoring API group, which a binding names its Prometheus by. */
const GROUP = 'monitoring.coreos.com';
/** The condition type a binding carries. */
export const ACCEPTED = 'Accepted';

/** The kinds a Prometheus selects and reports on. */
export type ConfigKind = 'ServiceMonitor' | 'PodMonitor' | 'PrometheusRule';

/** One Prometheus's verdict on one object it selects. */
export interface Verdict {
  accepted: boolean;
  /** CamelCase, for the condition's `reason`. */
  reason: string;
  message: string;
}

/** Verdicts of one render, by {@link configKey}; an object the Prometheus does not select has none. */
export type Verdicts = ReadonlyMap<string, Verdict>;

/** The `Accepted` condition, in the `metav1.Condition` shape. */
export interface AcceptedCondition {
  type: typeof ACCEPTED;
  status: 'True' | 'False';
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}

/** What one Prometheus says about an object (upstream's `WorkloadBinding`). */
export interface Binding {
  group: string;
  resource: string;
  namespace: string;
  name: string;
  conditions: AcceptedCondition[];
}

/** The status of a ServiceMonitor, PodMonitor or PrometheusRule. */
export interface ConfigResourceStatus {
  bindings?: Binding[];
}

/** How many objects of a kind a Prometheus selected, and how many of those it accepted. */
export interface Selection {
  selected: number;
  accepted: number;
}

/** A Prometheus, as a binding names it. */
export interface PrometheusRef {
  namespace: string;
  name: string;
}

/** The key of an object in {@link Verdicts}: `<Kind>/<namespace>/<name>`. */
export function configKey(kind: ConfigKind, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

/** The key of a monitor in `SkippedMonitor` form (`<ns>/<name>`, `podMonitor/<ns>/<name>`). */
function keyOfMonitor(monitor: string): string {
  return monitor.startsWith('podMonitor/')
    ? `PodMonitor/${monitor.slice('podMonitor/'.length)}`
    : `ServiceMonitor/${monitor}`;
}

/** Problems for a message: the first five, and how many more, so an Event or a status stays short. */
export function summary(problems: readonly string[]): string {
  const shown = problems.slice(0, 5).join('; ');
  return problems.length > 5 ? `${shown}; and ${problems.length - 5} more` : shown;
}

/**
 * The verdicts of one render on the ServiceMonitors and PodMonitors it selected: accepted, unless it
 * was skipped as invalid (`InvalidConfiguration`) or left out for the configuration's size
 * (`ConfigTooLarge`).
 */
export function monitorVerdicts(
  prometheus: PrometheusRef,
  selected: {
    services: ReadonlyArray<{ metadata: PrometheusRef }>;
    pods: ReadonlyArray<{ metadata: PrometheusRef }>;
  },
  skipped: readonly SkippedMonitor[],
  leftOut: readonly LeftOutMonitor[],
  maxGzipBytes: number,
): Map<string, Verdict> {
  const by = `Prometheus ${prometheus.namespace}/${prometheus.name}`;
  const verdicts = new Map<string, Verdict>();
  const accept = (key: string): void => {
    verdicts.set(key, {
      accepted: true,
      reason: 'Accepted',
      message: `in the configuration of ${by}`,
    });
  };
  for (const monitor of selected.services)
    accept(configKey('ServiceMonitor', monitor.metadata.namespace, monitor.metadata.name));
  for (const monitor of selected.pods)
    accept(configKey('PodMonitor', monitor.metadata.namespace, monitor.metadata.name));
  for (const { monitor, problems } of skipped) {
    verdicts.set(keyOfMonitor(monitor), {
      accepted: false,
      reason: 'InvalidConfiguration',
      message: `skipped by ${by}: ${summary(problems)}`,
    });
  }
  for (const { monitor, gzipBytes } of leftOut) {
    verdicts.set(keyOfMonitor(monitor), {
      accepted: false,
      reason: 'ConfigTooLarge',
      message: `left out of ${by}: its jobs take about ${gzipBytes} gzipped bytes, more than fit in the ${maxGzipBytes} gzipped bytes of its configuration (the largest monitors are left out first)`,
    });
  }
  return verdicts;
}

/**
 * The verdicts of one render on the PrometheusRules it selected: accepted when every group loads;
 * otherwise not, naming the refused groups (the others still load, and the message says so).
 */
export function ruleVerdicts(
  prometheus: PrometheusRef,
  files: readonly Pick<CheckedRuleFile, 'rule' | 'refused' | 'tooLarge'>[],
): Map<string, Verdict> {
  const by = `Prometheus ${prometheus.namespace}/${prometheus.name}`;
  const verdicts = new Map<string, Verdict>();
  for (const { rule, refused, tooLarge } of files) {
    const key = configKey('PrometheusRule', rule.metadata.namespace, rule.metadata.name);
    const whole = refused.find((group) => group.group === ALL_GROUPS);
    if (refused.length === 0) {
      verdicts.set(key, {
        accepted: true,
        reason: 'Accepted',
        message: `every rule group loaded by ${by}`,
      });
    } else if (whole !== undefined) {
      verdicts.set(key, {
        accepted: false,
        reason: tooLarge === true ? 'RuleTooLarge' : 'InvalidConfiguration',
        message: `refused by ${by}: ${summary(whole.problems)}`,
      });
    } else {
      const groups = refused.map(
        (group) => `${JSON.stringify(group.group)}: ${summary(group.problems)}`,
      );
      verdicts.set(key, {
        accepted: false,
        reason: 'InvalidRuleGroup',
        message: `${refused.length} rule group(s) refused by ${by} (its other groups still load): ${summary(groups)}`,
      });
    }
  }
  return verdicts;
}

/** How many of `kind` the verdicts cover, and how many are accepted. */
export function selectionOf(verdicts: Verdicts, kind: ConfigKind): Selection {
  let selected = 0;
  let accepted = 0;
  for (const [key, verdict] of verdicts) {
    if (!key.startsWith(`${kind}/`)) continue;
    selected += 1;
    if (verdict.accepted) accepted += 1;
  }
  return { selected, accepted };
}

function isBinding(value: unknown): value is Binding {
  if (value === null || typeof value !== 'object') return false;
  const binding = value as Record<string, unknown>;
  return (
    typeof binding.namespace === 'string' &&
    typeof binding.name === 'string' &&
    Array.isArray(binding.conditions)
  );
}

function names(binding: Binding, prometheus: PrometheusRef): boolean {
  return (
    binding.group === GROUP &&
    binding.resource === 'prometheuses' &&
    binding.namespace === prometheus.namespace &&
    binding.name === prometheus.name
  );
}

/**
 * The bindings an object should carry once `prometheus`'s verdict on it (`undefined`: it no longer
 * selects it) replaces what that Prometheus said before; `undefined` when nothing changes, so an
 * unchanged verdict is never written. Other Prometheuses' bindings are kept as they are (anything that
 * is not a binding is dropped: a status is anyone's to write). The condition keeps its
 * `lastTransitionTime` while its status stays the same, as `metav1.Condition` requires.
 */
export function nextBindings(
  current: unknown,
  prometheus: PrometheusRef,
  verdict: Verdict | undefined,
  generation: number | undefined,
  now: string,
): Binding[] | undefined {
  const valid = Array.isArray(current) ? current.filter(isBinding) : [];
  const changedShape = !Array.isArray(current)
    ? current !== undefined
    : valid.length !== current.length;
  const index = valid.findIndex((binding) => names(binding, prometheus));
  const before = index < 0 ? undefined : valid[index];
  if (verdict === undefined) {
    if (before === undefined) return changedShape ? valid : undefined;
    return valid.filter((_, i) => i !== index);
  }
  const status = verdict.accepted ? 'True' : 'False';
  const previous = before?.conditions.find((condition) => condition?.type === ACCEPTED);
  const condition: AcceptedCondition = {
    type: ACCEPTED,
    status,
    reason: verdict.reason,
    message: verdict.message,
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    lastTransitionTime:
      previous?.status === status && typeof previous.lastTransitionTime === 'string'
        ? previous.lastTransitionTime
        : now,
  };
  const binding: Binding = {
    group: GROUP,
    resource: 'prometheuses',
    namespace: prometheus.namespace,
    name: prometheus.name,
    conditions: [condition],
  };
  if (!changedShape && before !== undefined && sameJson(before, binding)) return undefined;
  return index < 0
    ? [...valid, binding]
    : valid.map((existing, i) => (i === index ? binding : existing));
}
