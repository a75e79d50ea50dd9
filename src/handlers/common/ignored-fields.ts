/**
 * Naming the fields an upstream-compatible spec sets that an operator keeps but does not act on: the
 * walk and the Event message shared by the bundled operators. Each operator supplies its own tables
 * (what it supports, which ignored values are harmless, what an ignored field means).
 */

import { isPlainObject } from './plain-object.js';

/**
 * The fields an operator acts on, below one spec: `true` is a field acted on as a whole (whatever it
 * holds), an object lists the fields acted on in an object (every other one is ignored), and a
 * one-element array applies its shape to each item of a list.
 */
export type Supported = true | { readonly [field: string]: Supported } | readonly [Supported];

/** The Event reason for accepted-but-ignored fields. */
export const IGNORED_FIELDS_REASON = 'IgnoredFields';

/** Unset in upstream's Go types (`omitempty`): nothing to ignore. */
function unset(value: unknown): boolean {
  return (
    value === undefined ||
    value === null ||
    value === '' ||
    (Array.isArray(value) && value.length === 0)
  );
}

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]{0,62}$/;

/** `parent.key`, or `parent["key"]` for a key that is not a plain name (clipped, so a hostile key stays short). */
function child(parent: string, key: string): string {
  if (PLAIN_KEY.test(key)) return `${parent}.${key}`;
  const shown = key.length > 40 ? `${key.slice(0, 40)}...` : key;
  return `${parent}[${JSON.stringify(shown)}]`;
}

function walk(
  value: unknown,
  supported: Supported,
  path: string,
  harmless: Readonly<Record<string, unknown>>,
  out: string[],
): void {
  if (supported === true) return;
  if (Array.isArray(supported)) {
    if (Array.isArray(value))
      value.forEach((item, index) =>
        walk(item, supported[0] as Supported, `${path}[${index}]`, harmless, out),
      );
    return;
  }
  // A value of the wrong type is the schema's to refuse; nothing below it can be reported sensibly.
  if (!isPlainObject(value)) return;
  const fields = supported as { readonly [field: string]: Supported };
  for (const [key, field] of Object.entries(value)) {
    if (unset(field)) continue;
    const at = child(path, key);
    if (Object.hasOwn(fields, key)) {
      walk(field, fields[key]!, at, harmless, out);
      continue;
    }
    const pattern = at.replace(/\[\d+\]/g, '[]');
    if (Object.hasOwn(harmless, pattern) && harmless[pattern] === field) continue;
    out.push(at);
  }
}

/**
 * The paths (`spec.TLS`, `spec.endpoints[0].tlsConfig`) of the fields `spec` sets outside `supported`,
 * in the order they appear; empty when there are none. Fields unset in upstream's sense (null, `""`,
 * `[]`) and ignored fields set to a `harmless` value (keyed by path, list indices as `[]`) are not
 * listed. Pure; `spec` is untrusted.
 */
export function findIgnoredFields(
  spec: unknown,
  supported: Supported,
  harmless: Readonly<Record<string, unknown>> = {},
): string[] {
  const out: string[] = [];
  walk(spec, supported, 'spec', harmless, out);
  return out;
}

/** Characters of the path list in a message; the rest is counted, so the advice at the end always fits an Event. */
const LISTED_CHARACTERS = 600;

/** What {@link describeIgnoredFields} needs besides the paths. */
export interface IgnoredFieldsMessageOptions {
  kind: string;
  generation?: number;
  /** What an ignored field means for the user, by path, where that is not obvious. */
  consequences?: Readonly<Record<string, string>>;
  /** Appended to "remove it/them": e.g. where to go instead. */
  alternative?: (pronoun: 'it' | 'them') => string;
}

/** The Event message naming `paths` (from {@link findIgnoredFields}), what they mean, and what to do about them. */
export function describeIgnoredFields(
  paths: readonly string[],
  options: IgnoredFieldsMessageOptions,
): string {
  const { kind, generation, consequences = {}, alternative } = options;
  const listed: string[] = [];
  let length = 0;
  for (const path of paths) {
    const meaning = Object.hasOwn(consequences, path) ? consequences[path] : undefined;
    const shown = meaning === undefined ? path : `${path} (${meaning})`;
    if (listed.length > 0 && length + shown.length + 2 > LISTED_CHARACTERS) break;
    listed.push(shown);
    length += shown.length + 2;
  }
  const more = paths.length - listed.length;
  const list = listed.join(', ') + (more > 0 ? ` and ${more} more` : '');
  const which =
    generation === undefined ? `this ${kind}` : `this ${kind} (generation ${generation})`;
  const one = paths.length === 1;
  const pronoun = one ? 'it' : 'them';
  return (
    `${which} sets ${paths.length} ${one ? 'field' : 'fields'} that Konductor keeps but does not act on: ${list}. ` +
    `${one ? 'It has' : 'They have'} no effect here; remove ${pronoun}${alternative ? alternative(pronoun) : ''} (docs/upstream-compatibility.md lists what is supported).`
  );
}
