/**
 * The `external_labels` of the global block: the two reserved labels naming the Prometheus object
 * and its replica, plus the user's `externalLabels`, whose names must pass the label-name rule of
 * the Prometheus version deployed: one bad name makes the whole configuration fail to load.
 */
import { compareStrings } from './selectors.js';
import {
  allowsUtf8LabelNames,
  DEFAULT_PROMETHEUS_VERSION,
  prometheusVersion,
} from './prometheus-version.js';
import { LABEL_NAME } from './relabel-checks.js';
import type { PrometheusResource } from './types.js';

/** External label naming the Prometheus object (`<ns>/<name>`). */
export const PROMETHEUS_EXTERNAL_LABEL = 'prometheus';
/** External label naming the replica; the config reloader substitutes `$(POD_NAME)`. */
export const REPLICA_EXTERNAL_LABEL = 'prometheus_replica';

/** Whether `text` survives UTF-8 encoding unchanged (no lone surrogate), as Go's `utf8.ValidString` requires. */
function isValidUtf8(text: string): boolean {
  return Buffer.from(text, 'utf8').toString('utf8') === text;
}

/** Quotes a name or value for a problem, cut to 64 characters so an Event stays short. */
function quote(text: string): string {
  return JSON.stringify(text.length <= 64 ? text : `${text.slice(0, 60)}…`);
}

/**
 * Why `spec.externalLabels` would make the configuration unloadable on the version deployed: on
 * 2.x a name must match `[a-zA-Z_][a-zA-Z0-9_]*` (so `some-other-key` is refused), from 3.0 any
 * non-empty UTF-8 name is accepted; values must be UTF-8. Reserved names are left out: they are
 * ignored, not rendered.
 */
export function externalLabelProblems(prometheus: PrometheusResource): string[] {
  const labels = prometheus.spec.externalLabels;
  if (labels === undefined || labels === null) return [];
  if (typeof labels !== 'object' || Array.isArray(labels))
    return ['spec.externalLabels: must be a map of label names to values'];
  const version = prometheus.spec.version || `${DEFAULT_PROMETHEUS_VERSION} (the default)`;
  const utf8 = allowsUtf8LabelNames(prometheusVersion(prometheus.spec));
  const problems: string[] = [];
  for (const [name, value] of Object.entries(labels)) {
    if (name === PROMETHEUS_EXTERNAL_LABEL || name === REPLICA_EXTERNAL_LABEL) continue;
    if (utf8 ? name === '' || !isValidUtf8(name) : !LABEL_NAME.test(name)) {
      const rule = utf8
        ? 'a non-empty UTF-8 string'
        : 'letters, digits and underscores, not starting with a digit';
      problems.push(
        `spec.externalLabels: ${quote(name)} is not a valid label name for Prometheus ${version} (must be ${rule})`,
      );
    }
    if (typeof value !== 'string' || !isValidUtf8(value)) {
      problems.push(`spec.externalLabels[${quote(name)}]: the value must be a UTF-8 string`);
    }
  }
  return problems;
}

/** `external_labels`: the reserved two plus the user's, keys sorted; reserved names win. */
export function externalLabels(prometheus: PrometheusResource): Record<string, string> {
  const labels = new Map<string, string>([
    [PROMETHEUS_EXTERNAL_LABEL, `${prometheus.metadata.namespace}/${prometheus.metadata.name}`],
    [REPLICA_EXTERNAL_LABEL, '$(POD_NAME)'],
  ]);
  for (const [key, value] of Object.entries(prometheus.spec.externalLabels ?? {})) {
    // Upstream logs a warning and ignores a user label that reuses a reserved name.
    if (!labels.has(key)) labels.set(key, value);
  }
  const sorted: Record<string, string> = {};
  for (const key of [...labels.keys()].sort(compareStrings))
    sorted[key] = labels.get(key) as string;
  return sorted;
}
