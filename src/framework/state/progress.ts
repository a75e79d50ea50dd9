import { createHash } from 'node:crypto';
import type { KubeObject } from '../watching/events.js';
import { progressKey } from './keys.js';

/** Why handlers run for an object. */
export type ChangeReason = 'create' | 'update' | 'delete' | 'resume';

/**
 * One handler's progress on the current change, kept in the annotation `konductor.dev/<handler-id>`
 * so retries survive restarts. Times are ISO-8601 UTC.
 */
export interface ProgressRecord {
  /** First attempt. */
  started?: string;
  /** When it finished (success or final failure). */
  stopped?: string;
  /** Not before this time: the next attempt is delayed. */
  delayed?: string;
  purpose?: ChangeReason;
  /**
   * Which change the record belongs to: a short digest of the diff-base it was handled against
   * (`none` for a create). A final failure stays on the object as a record for users; a later change
   * has another diff-base, so the old record is not mistaken for that change being finished.
   */
  base?: string;
  /** Attempts made so far. */
  retries?: number;
  success?: boolean;
  failure?: boolean;
  /** The last error. */
  message?: string;
}

/** The tag of the change an object is at: a digest of its raw diff-base annotation. */
export function changeTag(rawDiffBase: string | undefined): string {
  return rawDiffBase === undefined ? 'none' : createHash('sha256').update(rawDiffBase).digest('hex').slice(0, 12);
}

/** Reads a handler's record; a corrupt one reads as absent (the handler starts over) rather than failing. */
export function readProgress(object: KubeObject, handlerId: string): ProgressRecord | undefined {
  const raw = object.metadata?.annotations?.[progressKey(handlerId)];
  if (raw === undefined) return undefined;
  try {
    const parsed = JSON.parse(raw) as unknown;
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as ProgressRecord) : undefined;
  } catch {
    return undefined;
  }
}

/** Compact JSON without undefined fields. */
export function serializeProgress(record: ProgressRecord): string {
  return JSON.stringify(record);
}

/** Whether the handler is done with this change, one way or the other. */
export function isFinished(record: ProgressRecord | undefined): boolean {
  return record?.success === true || record?.failure === true;
}

/** Milliseconds until the record's delay passes (0 when not delayed). */
export function delayRemainingMs(record: ProgressRecord | undefined, now: number): number {
  if (!record?.delayed) return 0;
  const at = Date.parse(record.delayed);
  return Number.isNaN(at) ? 0 : Math.max(0, at - now);
}
