import { shortHash } from '../objects/short-hash.js';
import { annotationName } from './annotation-name.js';

/** The identity of an operator that sets none; its keys are those of every Konductor release before identities. */
export const DEFAULT_IDENTITY = 'konductor.dev';

/**
 * The name of the marker annotation (`<prefix>/konductor-managed: "yes"`) an operator with its own
 * identity writes along with its bookkeeping, so other Konductor operators on the same objects know
 * that prefix for bookkeeping and leave it out of their essence (Kopf's `kopf-managed`).
 */
export const MANAGED_MARKER_NAME = 'konductor-managed';

/** The marker's value. */
export const MANAGED_MARKER_VALUE = 'yes';

const MAX_SUBDOMAIN = 253;
const MAX_FIELD_MANAGER = 128;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LEASE_SUFFIX = '-leader';

/** An identity that is not a DNS-1123 subdomain. */
export class InvalidIdentityError extends Error {
  override readonly name = 'InvalidIdentityError';
}

/**
 * Who an operator is on the objects it handles: the prefix of every annotation it writes (diff-base,
 * handler progress, timer schedules), its finalizer, its default leader-election Lease, the
 * `source.component` of its Events and the field manager of its writes. Two operators with different
 * identities handle the same objects independently: each keeps its own bookkeeping and finalizer, and
 * neither sees the other's bookkeeping as a change.
 *
 * The default identity, `konductor.dev`, keeps every name Konductor used before identities existed
 * (`konductor.dev/...` keys, Lease `konductor-leader`, Event component and field manager `konductor`),
 * so existing objects and deployments carry on unchanged.
 */
export class Identity {
  /** The identity of an operator that sets none: `konductor.dev`. */
  static readonly DEFAULT: Identity = new Identity(DEFAULT_IDENTITY);

  /** The identity string, a DNS-1123 subdomain (e.g. `db-operator.example.com`). */
  readonly name: string;
  /** The prefix of the operator's annotation keys and finalizer (the part before `/`): the identity itself. */
  readonly prefix: string;
  /** The annotation keeping the last handled essence of an object. */
  readonly diffBaseKey: string;
  /** The operator's finalizer. */
  readonly finalizer: string;
  /**
   * The field under `status` that keeps the diff-base and progress with status storage:
   * `status["<identity>"]` (`status["konductor.dev"]` for the default identity). The identity itself,
   * not a short name like Kopf's `kopf`: identities are distinct by construction, so two operators
   * never share the field, and it is the name users already see on the annotations and finalizer.
   */
  readonly statusKey: string;
  /**
   * The marker annotation written with the bookkeeping, or undefined for the default identity (whose
   * prefix every Konductor operator knows, and whose objects must stay as they were).
   */
  readonly managedMarker: string | undefined;
  /** The default leader-election Lease name: `konductor-leader` for the default identity, else derived from the identity. */
  readonly leaseName: string;
  /** The `source.component` of the operator's Events: `konductor` for the default identity, else the identity. */
  readonly eventComponent: string;
  /** The `fieldManager` sent with the operator's writes (at most 128 characters): `konductor` for the default identity. */
  readonly fieldManager: string;

  private readonly keyPrefix: string;

  private constructor(name: string) {
    this.name = name;
    this.prefix = name;
    this.keyPrefix = `${name}/`;
    this.diffBaseKey = `${name}/last-handled-configuration`;
    this.finalizer = `${name}/finalizer`;
    this.statusKey = name;
    const isDefault = name === DEFAULT_IDENTITY;
    this.managedMarker = isDefault ? undefined : `${name}/${MANAGED_MARKER_NAME}`;
    this.leaseName = isDefault
      ? 'konductor-leader'
      : cutWithHash(name, MAX_SUBDOMAIN - LEASE_SUFFIX.length) + LEASE_SUFFIX;
    this.eventComponent = isDefault ? 'konductor' : name;
    this.fieldManager = isDefault ? 'konductor' : cutWithHash(name, MAX_FIELD_MANAGER);
  }

  /**
   * The identity named `raw`, checked: a DNS-1123 subdomain (lower-case letters, digits, `-` and `.`,
   * a letter or digit at each end of every part, at most 253 characters), since it is the prefix of
   * annotation keys and finalizers. Throws an `InvalidIdentityError` naming the value and the rule.
   */
  static parse(raw: string): Identity {
    if (raw === DEFAULT_IDENTITY) return Identity.DEFAULT;
    const problem = subdomainProblem(raw);
    if (problem !== undefined) {
      throw new InvalidIdentityError(
        `the operator identity ${JSON.stringify(raw)} is not a DNS-1123 subdomain (${problem}): use lower-case letters, digits, '-' and '.', ` +
          `with a letter or digit at each end of every dot-separated part, at most ${MAX_SUBDOMAIN} characters, e.g. 'db-operator.example.com'; ` +
          'it prefixes the annotations and the finalizer the operator writes',
      );
    }
    return new Identity(raw);
  }

  /** Whether this is the default identity, `konductor.dev`. */
  get isDefault(): boolean {
    return this.name === DEFAULT_IDENTITY;
  }

  /** The annotation keeping a change handler's progress: `<prefix>/<handler id as an annotation name>`. */
  progressKey(handlerId: string): string {
    return this.keyPrefix + annotationName(handlerId);
  }

  /** The annotation keeping a long timer's schedule: `<prefix>/timer.<timer id>`. */
  timerKey(timerId: string): string {
    return this.keyPrefix + annotationName(`timer.${timerId}`);
  }

  /** Whether an annotation key is this operator's own bookkeeping (exactly under `<prefix>/`). */
  isFrameworkKey(key: string): boolean {
    return key.startsWith(this.keyPrefix);
  }
}

/** Why `raw` is not a DNS-1123 subdomain, or undefined when it is one. */
function subdomainProblem(raw: string): string | undefined {
  if (raw.length === 0) return 'it is empty';
  if (raw.length > MAX_SUBDOMAIN) return `it has ${raw.length} characters`;
  if (!DNS_SUBDOMAIN.test(raw)) return 'it has a character or a part that is not allowed';
  return undefined;
}

/** `raw` when it fits in `max` characters; otherwise cut, with a hash of the whole so two cut names never meet. */
function cutWithHash(raw: string, max: number): string {
  if (raw.length <= max) return raw;
  const digest = shortHash(raw);
  return `${raw.slice(0, max - digest.length - 1).replace(/[^a-z0-9]+$/, '')}-${digest}`;
}

/**
 * Whether an annotation key is the bookkeeping of a Konductor operator, as `identity` sees it: its
 * own keys, the default identity's (`konductor.dev/...`, which every Konductor operator knows), or
 * keys under a prefix whose marker (`<prefix>/konductor-managed`) is on the object. Such keys are
 * never part of the essence, so an operator never takes another's bookkeeping for a change. Anyone
 * who can edit the object can add a marker, which only hides annotations of that object from its own
 * change detection: nothing they could not do by editing the object.
 */
export function isBookkeepingKey(
  key: string,
  annotations: Readonly<Record<string, string>>,
  identity: Identity,
): boolean {
  if (identity.isFrameworkKey(key)) return true;
  const slash = key.indexOf('/');
  if (slash <= 0) return false;
  const prefix = key.slice(0, slash);
  return (
    prefix === DEFAULT_IDENTITY || Object.hasOwn(annotations, `${prefix}/${MANAGED_MARKER_NAME}`)
  );
}

/**
 * The marker annotation to add to a write of `identity`'s bookkeeping on an object whose annotations
 * are `existing`, or undefined when none is needed (the default identity, or already there).
 */
export function markerToWrite(
  identity: Identity,
  existing: Readonly<Record<string, string>> | undefined,
): Record<string, string> | undefined {
  const marker = identity.managedMarker;
  if (marker === undefined || (existing !== undefined && existing[marker] === MANAGED_MARKER_VALUE))
    return undefined;
  return { [marker]: MANAGED_MARKER_VALUE };
}
