import type { KubeObject } from '../watching/events.js';
import { getField, setField, type FieldPath } from './field-path.js';
import { DIFF_BASE_KEY, isFrameworkKey } from './keys.js';

/** What a change to an object means for handlers: everything but status and server-managed metadata. */
export type Essence = Record<string, unknown>;

const IGNORED_ANNOTATIONS = new Set(['kubectl.kubernetes.io/last-applied-configuration']);

/**
 * The essence of an object: its body without `apiVersion`, `kind`, `status` and metadata other than
 * labels and non-framework annotations, plus any `extraFields` (such as `status.phase` watched by a
 * field handler). Comparing essences tells real changes from the echo of our own writes.
 */
export function essenceOf(object: KubeObject, extraFields: readonly FieldPath[] = []): Essence {
  const essence: Essence = {};
  for (const [key, value] of Object.entries(object)) {
    if (key !== 'apiVersion' && key !== 'kind' && key !== 'status' && key !== 'metadata') essence[key] = value;
  }
  const labels = object.metadata?.labels;
  const annotations = Object.fromEntries(
    Object.entries(object.metadata?.annotations ?? {}).filter(([key]) => !isFrameworkKey(key) && !IGNORED_ANNOTATIONS.has(key)),
  );
  const metadata: Record<string, unknown> = {};
  if (labels && Object.keys(labels).length > 0) metadata.labels = labels;
  if (Object.keys(annotations).length > 0) metadata.annotations = annotations;
  if (Object.keys(metadata).length > 0) essence.metadata = metadata;
  for (const field of extraFields) {
    const value = getField(object, field);
    if (value !== undefined) setField(essence, field, value);
  }
  return essence;
}

/** The stored essence from the diff-base annotation; undefined when absent (never handled). Throws on corrupt JSON. */
export function readDiffBase(object: KubeObject): Essence | undefined {
  const raw = object.metadata?.annotations?.[DIFF_BASE_KEY];
  if (raw === undefined) return undefined;
  const parsed = JSON.parse(raw) as unknown;
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('the diff-base annotation is not a JSON object');
  return parsed as Essence;
}

/** The annotation value storing an essence. */
export function serializeDiffBase(essence: Essence): string {
  return JSON.stringify(essence);
}
