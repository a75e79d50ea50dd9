/**
 * What ServiceMonitor and PodMonitor jobs share (prometheus-operator's `promcfg.go`): the Kubernetes
 * SD block with its optional role selectors, the selector relabelings, `honor_labels` /
 * `honor_timestamps` under the Prometheus' overrides, and user relabelings in snake_case.
 */
import { atLeast, prometheusVersion } from './prometheus-version.js';
import { compareStrings, labelSelectorText } from './selectors.js';
import type {
  KubernetesSDConfig,
  LabelSelector,
  PrometheusResource,
  RelabelConfig,
  RelabelRule,
  RoleSelector,
  SelectorMechanism,
} from './types.js';

/** Replaces every character outside `[a-zA-Z0-9_]` with `_`, as upstream does for label names. */
export function sanitizeLabelName(name: string): string {
  return name.replace(/[^a-zA-Z0-9_]/g, '_');
}

/** camelCase → snake_case, in upstream's key order (`generateRelabelConfig`), action lower-cased. */
export function toRelabelRule(rc: RelabelConfig): RelabelRule {
  const rule: RelabelRule = {};
  if (rc.sourceLabels !== undefined && rc.sourceLabels.length > 0)
    rule.source_labels = [...rc.sourceLabels];
  if (rc.separator !== undefined) rule.separator = rc.separator;
  if (rc.targetLabel !== undefined && rc.targetLabel !== '') rule.target_label = rc.targetLabel;
  if (rc.regex !== undefined && rc.regex !== '') rule.regex = rc.regex;
  if (rc.modulus !== undefined && rc.modulus !== 0) rule.modulus = rc.modulus;
  if (rc.replacement !== undefined) rule.replacement = rc.replacement;
  if (rc.action !== undefined && rc.action !== '') rule.action = rc.action.toLowerCase();
  return rule;
}

/** Whose labels a selector matches: Services (ServiceMonitors) or Pods (PodMonitors). */
export type SelectedKind = 'service' | 'pod';

/**
 * Keep/drop rules that leave only targets whose Service (or Pod) the monitor's selector matches,
 * `matchLabels` keys sorted, then `matchExpressions` in order. Values go into the regexes
 * unescaped, as upstream does: they were validated as label values.
 */
export function selectorRules(
  selector: LabelSelector | undefined,
  kind: SelectedKind,
): RelabelRule[] {
  const label = (key: string): string =>
    `__meta_kubernetes_${kind}_label_${sanitizeLabelName(key)}`;
  const present = (key: string): string =>
    `__meta_kubernetes_${kind}_labelpresent_${sanitizeLabelName(key)}`;
  const rules: RelabelRule[] = [];
  const matchLabels = selector?.matchLabels ?? {};
  for (const key of Object.keys(matchLabels).sort(compareStrings)) {
    rules.push({
      action: 'keep',
      source_labels: [label(key), present(key)],
      regex: `(${matchLabels[key]});true`,
    });
  }
  for (const req of selector?.matchExpressions ?? []) {
    const values = `(${(req.values ?? []).join('|')});true`;
    switch (req.operator) {
      case 'In':
        rules.push({
          action: 'keep',
          source_labels: [label(req.key), present(req.key)],
          regex: values,
        });
        break;
      case 'NotIn':
        rules.push({
          action: 'drop',
          source_labels: [label(req.key), present(req.key)],
          regex: values,
        });
        break;
      case 'Exists':
        rules.push({ action: 'keep', source_labels: [present(req.key)], regex: 'true' });
        break;
      case 'DoesNotExist':
        rules.push({ action: 'drop', source_labels: [present(req.key)], regex: 'true' });
        break;
    }
  }
  return rules;
}

/** Whether the monitor's selector goes into the SD config's `selectors` instead of relabelings. */
export function usesRoleSelector(mechanism: SelectorMechanism | undefined): boolean {
  return mechanism === 'RoleSelector';
}

/**
 * The one `kubernetes_sd_configs` entry: `role`, `namespaces` (absent for `any`), and for
 * `RoleSelector` one selector per role in `selectorRoles`, each with the selector's text form.
 */
export function kubernetesSD(
  role: KubernetesSDConfig['role'],
  namespaces: string[] | undefined,
  mechanism: SelectorMechanism | undefined,
  selector: LabelSelector | undefined,
  selectorRoles: ReadonlyArray<RoleSelector['role']>,
): KubernetesSDConfig {
  const sd: KubernetesSDConfig = { role };
  if (namespaces !== undefined) sd.namespaces = { names: namespaces };
  if (usesRoleSelector(mechanism)) {
    const label = labelSelectorText(selector);
    sd.selectors = selectorRoles.map((selectorRole) => ({ role: selectorRole, label }));
  }
  return sd;
}

/**
 * `honor_labels` (always written; false under `overrideHonorLabels`) and `honor_timestamps`
 * (written when the endpoint sets it or `overrideHonorTimestamps` forces it false; never before
 * Prometheus 2.9, which does not know the key), as upstream's `AddHonorLabels` / `AddHonorTimestamps`.
 */
export function honorFields(
  prometheus: PrometheusResource,
  endpoint: { honorLabels?: boolean; honorTimestamps?: boolean },
): { honor_labels: boolean; honor_timestamps?: boolean } {
  const spec = prometheus.spec;
  const fields: { honor_labels: boolean; honor_timestamps?: boolean } = {
    honor_labels: endpoint.honorLabels === true && spec.overrideHonorLabels !== true,
  };
  const overrideTimestamps = spec.overrideHonorTimestamps === true;
  if (
    (endpoint.honorTimestamps != null || overrideTimestamps) &&
    atLeast(prometheusVersion(spec), 2, 9, 0)
  ) {
    fields.honor_timestamps = endpoint.honorTimestamps === true && !overrideTimestamps;
  }
  return fields;
}

/** The user's relabelings, in snake_case. */
export function userRules(relabelings: readonly RelabelConfig[] | undefined): RelabelRule[] {
  return (relabelings ?? []).map(toRelabelRule);
}
