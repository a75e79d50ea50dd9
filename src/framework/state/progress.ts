import { createHash } from 'node:crypto';
import type { KubeObject } from '../objects/kube-object.js';
import { Identity } from './identity.js';

/** Every reason handlers run for an object; change handlers are registered for one of them. */
export const CHANGE_REASONS = ['create', 'update', 'delete', 'resume'] as const;

/** Why handlers run for an object, which is also the kind of a change handler (`on.create` runs for `create`). */
export type ChangeReason = (typeof CHANGE_REASONS)[number];

/**
 * One handler's progress on the current change, kept in the annotation `<identity prefix>/<handler-id>`
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
   * (`new.<digest of the uid>` for a create; `none` in older records, which no change matches any more).
   * A final failure stays on the object as a record for users; a later change
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

/**
 * The tag of the change an object is at: a digest of its raw diff-base annotation, or, before its
 * first handling, of its uid (`new.<digest>`), so progress copied onto another object with its
 * annotations never counts as that object's own.
 */
export function changeTag(rawDiffBase: string | undefined, uid = ''): string {
  if (rawDiffBase === undefined)
    return `new.${createHash('sha256').update(uid).digest('hex').slice(0, 8)}`;
  return createHash('sha256').update(rawDiffBase).digest('hex').slice(0, 12);
}

/** The longest `message` kept in a record: an annotation is no place for a whole stack trace. */
export const MAX_PROGRESS_MESSAGE_LENGTH = 1_000;

/** A handler's stored record, read and checked: a usable `record`, nothing, or why the stored one is unusable. */
export type ProgressReading =
  { record?: ProgressRecord; problem?: undefined } | { record?: undefined; problem: string };

const REASONS: readonly string[] = CHANGE_REASONS;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;
const FIELDS = new Set([
  'started',
  'stopped',
  'delayed',
  'purpose',
  'base',
  'retries',
  'success',
  'failure',
  'message',
]);
const TAG = /^(new\.[0-9a-f]{8}|none|[0-9a-f]{12})$/;

/**
 * Checks a stored record field by field: the annotation is anyone's to write, so a forged or corrupt
 * one must never throw, suspend a handler or lift its retry limit. Unknown fields are dropped.
 */
export function parseProgress(raw: string): ProgressReading {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { problem: 'not JSON' };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    return { problem: 'not a JSON object' };
  const input = parsed as Record<string, unknown>;
  for (const field of ['started', 'stopped', 'delayed'] as const) {
    const value = input[field];
    if (
      value !== undefined &&
      (typeof value !== 'string' || !ISO_TIME.test(value) || Number.isNaN(Date.parse(value)))
    ) {
      return { problem: `${field} is not an ISO-8601 UTC time` };
    }
  }
  if (
    input.purpose !== undefined &&
    (typeof input.purpose !== 'string' || !REASONS.includes(input.purpose))
  ) {
    return { problem: `purpose is not one of ${REASONS.join(', ')}` };
  }
  if (input.base !== undefined && (typeof input.base !== 'string' || !TAG.test(input.base)))
    return { problem: 'base is not a change tag' };
  const retries = input.retries;
  if (
    retries !== undefined &&
    (typeof retries !== 'number' || !Number.isSafeInteger(retries) || retries < 0)
  ) {
    return { problem: 'retries is not a non-negative integer' };
  }
  for (const field of ['success', 'failure'] as const) {
    if (input[field] !== undefined && typeof input[field] !== 'boolean')
      return { problem: `${field} is not a boolean` };
  }
  if (input.message !== undefined && typeof input.message !== 'string')
    return { problem: 'message is not a string' };
  // Known fields in their stored order, so an unchanged record serializes to the same string (no rewrite).
  const record = Object.fromEntries(
    Object.entries(input).filter(([key]) => FIELDS.has(key)),
  ) as ProgressRecord;
  if (record.message !== undefined) record.message = capMessage(record.message);
  return { record };
}

/** Reads and checks a handler's record (see `parseProgress`). */
export function inspectProgress(
  object: KubeObject,
  handlerId: string,
  identity: Identity = Identity.DEFAULT,
): ProgressReading {
  const raw = object.metadata?.annotations?.[identity.progressKey(handlerId)];
  return raw === undefined ? {} : parseProgress(raw);
}

/** Reads a handler's record; an unusable one reads as absent (the handler starts over) rather than failing. */
export function readProgress(
  object: KubeObject,
  handlerId: string,
  identity: Identity = Identity.DEFAULT,
): ProgressRecord | undefined {
  return inspectProgress(object, handlerId, identity).record;
}

/** A message cut to `MAX_PROGRESS_MESSAGE_LENGTH` characters, saying that it was cut. */
export function capMessage(message: string): string {
  return message.length <= MAX_PROGRESS_MESSAGE_LENGTH
    ? message
    : `${message.slice(0, MAX_PROGRESS_MESSAGE_LENGTH - 13)}… (truncated)`;
}

/** Compact JSON without undefined fields. */
export function serializeProgress(record: ProgressRecord): string {
  return JSON.stringify(record);
}

/** Whether the handler is done with this change, one way or the other. */
export function isFinished(record: ProgressRecord | undefined): boolean {
  return record?.success === true || record?.failure === true;
}

/** Whether any of the records waits to try again after a failed attempt. */
export function isRetrying(records: Iterable<ProgressRecord>): boolean {
  for (const record of records) if (!isFinished(record) && (record.retries ?? 0) > 0) return true;
  return false;
}

/** Milliseconds until the record's delay passes (0 when not delayed). */
export function delayRemainingMs(record: ProgressRecord | undefined, now: number): number {
  if (!record?.delayed) return 0;
  const at = Date.parse(record.delayed);
  return Number.isNaN(at) ? 0 : Math.max(0, at - now);
}
