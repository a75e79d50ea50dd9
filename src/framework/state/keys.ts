/**
 * The default identity's keys, as names: what code and specs written before operator identities
 * use. The framework itself reads every key from the operator's {@link Identity}.
 */
import { Identity } from './identity.js';

export { annotationName } from './annotation-name.js';

/** The default identity's prefix (`konductor.dev`); an operator with its own identity uses `Identity.prefix`. */
export const PREFIX = Identity.DEFAULT.prefix;
/** Where the default identity keeps the last handled essence of an object. */
export const DIFF_BASE_KEY = Identity.DEFAULT.diffBaseKey;
/** The default identity's finalizer. */
export const FINALIZER = Identity.DEFAULT.finalizer;

/**
 * The default identity's annotation key for a handler's progress: `konductor.dev/<id>`. The name part
 * must be a valid annotation name (at most 63 characters of `[A-Za-z0-9._-]`, alphanumeric at both
 * ends), so other characters become `.` and long ids are cut and suffixed with a hash to stay unique.
 */
export function progressKey(handlerId: string): string {
  return Identity.DEFAULT.progressKey(handlerId);
}

/** Whether an annotation key belongs to the default identity's bookkeeping. */
export function isFrameworkKey(key: string): boolean {
  return Identity.DEFAULT.isFrameworkKey(key);
}
