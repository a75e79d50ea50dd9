import { getField, parseFieldPath } from '../objects/field-path.js';
import type { KubeObject } from '../objects/kube-object.js';

/** One requirement of a field selector: a dotted path compared with a value. */
export interface FieldRequirement {
  path: string;
  operator: 'equals' | 'notEquals';
  value: string;
}

const REQUIREMENT = /^([^\s!=,]+)\s*(==|=|!=)\s*([^\s!=,]*)$/;

/**
 * Parses a field selector (`metadata.name=main,status.phase!=Done`) so it can be applied in the
 * operator: `path=value`, `path==value` and `path!=value` on dotted paths; throws on anything else.
 */
export function parseFieldSelector(selector: string): FieldRequirement[] {
  return selector
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((part) => {
      const match = REQUIREMENT.exec(part);
      if (!match)
        throw new Error(
          `invalid field selector '${selector}': cannot read '${part}'; use path=value, path==value or path!=value, separated by commas`,
        );
      return {
        path: match[1]!,
        operator: match[2] === '!=' ? 'notEquals' : 'equals',
        value: match[3]!,
      };
    });
}

/** Whether an object satisfies every requirement. As on the server, values compare as strings and a missing field reads as ''. */
export function matchesFieldRequirements(
  object: KubeObject,
  requirements: readonly FieldRequirement[],
): boolean {
  return requirements.every(({ path, operator, value }) => {
    const actual = getField(object, parseFieldPath(path));
    const text =
      actual === undefined || actual === null
        ? ''
        : typeof actual === 'object'
          ? JSON.stringify(actual)
          : String(actual as string | number | boolean);
    return operator === 'equals' ? text === value : text !== value;
  });
}

/** Parses once and returns a matcher for objects. */
export function fieldSelectorMatcher(selector: string): (object: KubeObject) => boolean {
  const requirements = parseFieldSelector(selector);
  return (object) => matchesFieldRequirements(object, requirements);
}
