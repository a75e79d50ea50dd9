/**
 * Kubernetes label syntax (apimachinery `validation.IsValidLabelValue` / `IsQualifiedName`), which
 * `LabelSelectorAsSelector` enforces. prometheus-operator drops a ServiceMonitor whose selector fails
 * it; here it matters more, since selector values go into relabel regexes unescaped.
 */

const NAME = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)$/;
const DNS_SUBDOMAIN = /^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$/;
const MAX_VALUE = 63;
const MAX_PREFIX = 253;

/** Why `value` is not a valid label value (at most 63 characters of `[A-Za-z0-9._-]`, alphanumeric at both ends, or empty), or `undefined`. */
export function labelValueProblem(value: unknown): string | undefined {
  if (typeof value !== 'string')
    return `must be a string, not ${value === null ? 'null' : typeof value}`;
  if (value === '') return undefined;
  if (value.length > MAX_VALUE) return `must be no more than ${MAX_VALUE} characters`;
  if (!NAME.test(value))
    return "must be alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric";
  return undefined;
}

/** Why `key` is not a valid label key (`[prefix/]name`: a DNS subdomain prefix, a name as for values but non-empty), or `undefined`. */
export function labelKeyProblem(key: unknown): string | undefined {
  if (typeof key !== 'string') return `must be a string, not ${key === null ? 'null' : typeof key}`;
  const parts = key.split('/');
  if (parts.length > 2) return "must be a name with an optional DNS subdomain prefix and '/'";
  const name = parts.length === 2 ? (parts[1] as string) : key;
  if (parts.length === 2) {
    const prefix = parts[0] as string;
    if (prefix === '' || prefix.length > MAX_PREFIX || !DNS_SUBDOMAIN.test(prefix))
      return 'prefix must be a DNS subdomain (lower case, at most 253 characters)';
  }
  if (name === '') return 'name part must not be empty';
  if (name.length > MAX_VALUE) return `name part must be no more than ${MAX_VALUE} characters`;
  if (!NAME.test(name))
    return "name part must be alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric";
  return undefined;
}
