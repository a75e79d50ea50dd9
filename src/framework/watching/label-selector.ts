/** One requirement of a label selector, as the API server understands it. */
export type LabelRequirement =
  | { key: string; operator: 'equals' | 'notEquals'; value: string }
  | { key: string; operator: 'in' | 'notIn'; values: readonly string[] }
  | { key: string; operator: 'exists' | 'doesNotExist' };

// Label keys (optionally prefixed, `app.kubernetes.io/name`) and values, as Kubernetes allows them.
const KEY = String.raw`[A-Za-z0-9][-A-Za-z0-9_./]*`;
const VALUE = String.raw`[-A-Za-z0-9_.]*`;
const SET_VALUE = new RegExp(String.raw`^${VALUE}$`);
const EQUALITY = new RegExp(String.raw`^(${KEY})\s*(==|=|!=)\s*(${VALUE})$`);
const SET = new RegExp(String.raw`^(${KEY})\s+(in|notin)\s*\(([^()]*)\)$`);
const EXISTS = new RegExp(String.raw`^(${KEY})$`);
const ABSENT = new RegExp(String.raw`^!\s*(${KEY})$`);

/**
 * Parses a label selector in the API server's string form (`app=db,tier!=cache,env in (a,b)`),
 * so it can be applied in the operator when it cannot be sent to the server. Supports `k=v`,
 * `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` and `!k`; throws on anything else.
 */
export function parseLabelSelector(selector: string): LabelRequirement[] {
  return splitTopLevel(selector).map((part) => {
    let match = EQUALITY.exec(part);
    if (match)
      return {
        key: match[1]!,
        operator: match[2] === '!=' ? 'notEquals' : 'equals',
        value: match[3]!,
      };
    match = SET.exec(part);
    if (match && match[3]!.split(',').every((value) => SET_VALUE.test(value.trim()))) {
      const values = match[3]!.split(',').map((value) => value.trim());
      return { key: match[1]!, operator: match[2] === 'in' ? 'in' : 'notIn', values };
    }
    match = ABSENT.exec(part);
    if (match) return { key: match[1]!, operator: 'doesNotExist' };
    match = EXISTS.exec(part);
    if (match) return { key: match[1]!, operator: 'exists' };
    throw new Error(
      `invalid label selector '${selector}': cannot read '${part}'; use k=v, k==v, k!=v, k in (a,b), k notin (a,b), k or !k, separated by commas`,
    );
  });
}

/** Whether labels satisfy every requirement; as on the server, `!=` and `notin` match a missing label. */
export function matchesLabelRequirements(
  labels: Readonly<Record<string, string>> | undefined,
  requirements: readonly LabelRequirement[],
): boolean {
  return requirements.every((requirement) => {
    const value = labels?.[requirement.key];
    switch (requirement.operator) {
      case 'equals':
        return value === requirement.value;
      case 'notEquals':
        return value !== requirement.value;
      case 'in':
        return value !== undefined && requirement.values.includes(value);
      case 'notIn':
        return value === undefined || !requirement.values.includes(value);
      case 'exists':
        return value !== undefined;
      case 'doesNotExist':
        return value === undefined;
    }
  });
}

/** Parses once and returns a matcher for objects' labels. */
export function labelSelectorMatcher(
  selector: string,
): (labels: Readonly<Record<string, string>> | undefined) => boolean {
  const requirements = parseLabelSelector(selector);
  return (labels) => matchesLabelRequirements(labels, requirements);
}

/** Splits on commas outside parentheses, dropping empty parts (an empty selector matches everything). */
function splitTopLevel(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const char of selector) {
    if (char === '(') depth++;
    if (char === ')') depth--;
    if (char === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else {
      current += char;
    }
  }
  parts.push(current);
  return parts.map((part) => part.trim()).filter((part) => part !== '');
}
