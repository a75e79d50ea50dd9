// The checks every command applies to its flag values and `KONDUCTOR_*` variables. Each takes the raw
// value with where it came from, so a refusal is one line naming the flag or the variable.
import { DURATION_FORMS, toMilliseconds } from '../framework/clock/duration.js';
import { Identity, InvalidIdentityError } from '../framework/state/identity.js';

/** Bad command-line input or environment; the CLI prints its one-line message and exits with code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** A raw value and where it came from (`--flag` or `KONDUCTOR_VAR`), for error messages. */
export interface Setting {
  value: string;
  source: string;
}

/** Upper bound for durations in seconds (about 31 years): anything above is a typo. */
export const MAX_SECONDS = 1_000_000_000;

const DNS_LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS_SUBDOMAIN = new RegExp(`^${DNS_LABEL}(\\.${DNS_LABEL})*$`);
const API_GROUP = new RegExp(`^${DNS_LABEL}(\\.${DNS_LABEL})+$`);

/**
 * An integer from `min` to `max`; `what` completes "must be ..." in the refusal.
 * @throws {@link UsageError} for anything else, decimals and signs beyond the range included.
 */
export function integer(setting: Setting, min: number, max: number, what: string): number {
  const n = /^[+-]?\d+$/.test(setting.value) ? Number(setting.value) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw new UsageError(`${setting.source} must be ${what}, got '${setting.value}'`);
  return n;
}

/** A port from 0 (any free port) to 65535. */
export function port(setting: Setting): number {
  return integer(setting, 0, 65_535, 'an integer from 0 to 65535');
}

/**
 * A duration in seconds, written as every option takes one: seconds (`300`), numbers with units
 * (`90s`, `5m`, `1h30m`) or ISO-8601 (`PT5M`).
 */
export function duration(setting: Setting): number {
  let seconds: number;
  try {
    seconds = toMilliseconds(setting.value, setting.source) / 1_000;
  } catch {
    seconds = Number.NaN;
  }
  if (!Number.isFinite(seconds) || seconds > MAX_SECONDS) {
    throw new UsageError(
      `${setting.source} must be a duration: ${DURATION_FORMS}; got '${setting.value}'`,
    );
  }
  return seconds;
}

/** One of `allowed`, in any letter case. */
export function oneOf<T extends string>(setting: Setting, allowed: readonly T[]): T {
  const value = setting.value.toLowerCase();
  if (!(allowed as readonly string[]).includes(value)) {
    throw new UsageError(
      `${setting.source} must be one of ${allowed.join(', ')}; got '${setting.value}'`,
    );
  }
  return value as T;
}

/** A switch set from the environment: true/false, 1/0, yes/no or on/off. */
export function boolean(setting: Setting): boolean {
  const value = setting.value.toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(value)) return true;
  if (['false', '0', 'no', 'off'].includes(value)) return false;
  throw new UsageError(`${setting.source} must be true or false, got '${setting.value}'`);
}

/** Any text but blank: `--context ''` is a slip, not a wish for the default. */
export function nonEmpty(setting: Setting): string {
  if (setting.value.trim() === '') throw new UsageError(`${setting.source} must not be empty`);
  return setting.value;
}

/** A namespace name (RFC 1123 label), optionally with `*`/`?`; catches typos before the API server does. */
export function namespaceName(setting: Setting, allowGlob: boolean): string {
  const chars = allowGlob ? 'a-z0-9*?' : 'a-z0-9';
  const valid = new RegExp(`^[${chars}]([-${chars}]*[${chars}])?$`);
  if (setting.value.length > 63 || !valid.test(setting.value)) {
    const allowed = allowGlob
      ? "lowercase letters, digits and '-', plus '*' and '?' as wildcards"
      : "lowercase letters, digits and '-'";
    throw new UsageError(
      `${setting.source} '${setting.value}' is not a namespace name: use ${allowed}`,
    );
  }
  return setting.value;
}

/** The name of an object whose name must be an RFC 1123 label (a ServiceAccount, a Deployment). */
export function labelName(setting: Setting): string {
  if (setting.value.length > 63 || !new RegExp(`^${DNS_LABEL}$`).test(setting.value)) {
    throw new UsageError(
      `${setting.source} '${setting.value}' is not a valid name: use at most 63 lower-case letters, digits and '-'`,
    );
  }
  return setting.value;
}

/** A Lease name (RFC 1123 subdomain). */
export function subdomainName(setting: Setting): string {
  if (setting.value.length > 253 || !DNS_SUBDOMAIN.test(setting.value)) {
    throw new UsageError(
      `${setting.source} '${setting.value}' is not a valid name: use lowercase letters, digits, '-' and '.'`,
    );
  }
  return setting.value;
}

/** An API group: a lowercase domain with at least one dot. */
export function apiGroup(setting: Setting): string {
  if (setting.value.length > 253 || !API_GROUP.test(setting.value)) {
    throw new UsageError(
      `${setting.source} '${setting.value}' is not an API group: ` +
        'use a domain with at least one dot, in lowercase (e.g. example.com)',
    );
  }
  return setting.value;
}

/** A CustomResourceDefinition's name: `<plural>.<group>`, a DNS-1123 subdomain with at least one dot. */
export function crdName(setting: Setting): string {
  const name = subdomainName(setting);
  if (!name.includes('.')) {
    throw new UsageError(
      `${setting.source} '${name}' is not a CustomResourceDefinition name: ` +
        'use <plural>.<group>, e.g. widgets.example.com',
    );
  }
  return name;
}

/** The operator's identity, checked as the framework checks it. */
export function identity(setting: Setting): Identity {
  try {
    return Identity.parse(setting.value);
  } catch (error) {
    if (!(error instanceof InvalidIdentityError)) throw error;
    throw new UsageError(`${setting.source}: ${error.message}`);
  }
}

/** An https URL: the API server calls webhooks over TLS only. */
export function httpsUrl(setting: Setting): string {
  const { value, source } = setting;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(
      `${source} ${JSON.stringify(value)} is not a URL: ` +
        'give the https base URL the API server reaches the operator at, e.g. https://127.0.0.1:9443',
    );
  }
  if (url.protocol !== 'https:')
    throw new UsageError(
      `${source} ${value} must start with https://: the API server calls webhooks over TLS only`,
    );
  return value;
}

/** A Service as `namespace/name[:port]`. */
export function serviceReference(setting: Setting): {
  namespace: string;
  name: string;
  port?: number;
} {
  const match = /^([^/:]+)\/([^/:]+)(?::(\d+))?$/.exec(setting.value);
  if (!match) {
    throw new UsageError(
      `${setting.source} ${JSON.stringify(setting.value)} must be <namespace>/<name> or <namespace>/<name>:<port>`,
    );
  }
  const [, namespace, name, servicePort] = match;
  const { source } = setting;
  return {
    namespace: namespaceName({ value: namespace!, source }, false),
    name: namespaceName({ value: name!, source }, false),
    ...(servicePort
      ? { port: integer({ value: servicePort, source }, 1, 65_535, 'a port from 1 to 65535') }
      : {}),
  };
}

/** npm's rules for new package names: lowercase, URL-safe, at most 214 characters, optionally scoped. */
export function isPackageName(name: string): boolean {
  return name.length <= 214 && /^(@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*$/.test(name);
}

/** The values in their first order, each once. */
export function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}
