import { createHash } from 'node:crypto';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import type { EventPoster } from '../posting/events.js';
import type { ObjectMemory } from './object-memory.js';

/** Warnings remembered per object; past it the oldest are forgotten (an Event may repeat, memory stays bounded). */
export const MAX_WARNINGS_REMEMBERED = 16;

/** A Warning about an object: logged, and posted as an Event with `reason`. */
export interface Warning {
  /** What the warning is about; the same subject is warned about once. */
  subject: string;
  reason: string;
  message: string;
}

/** Where warnings go, and the object's memory of those already given. */
export interface WarningSink {
  memory: ObjectMemory;
  logger: Logger;
  poster: EventPoster;
}

/**
 * Posts a Warning Event once per object and subject while this process knows the object, so a bad
 * annotation or write gives one Event, not one per retry. Subjects are kept as digests, a few per
 * object: they may embed attacker-sized annotation values.
 */
export function warnOnce(sink: WarningSink, body: KubeObject, warning: Warning): void {
  const seen = sink.memory.warned;
  const digest = createHash('sha256').update(warning.subject).digest('base64');
  if (seen.has(digest)) return;
  if (seen.size >= MAX_WARNINGS_REMEMBERED) seen.clear();
  seen.add(digest);
  const meta = body.metadata ?? {};
  sink.logger.warn({ namespace: meta.namespace, name: meta.name }, warning.message);
  sink.poster.post(body, 'Warning', warning.reason, warning.message);
}

/** A framework annotation that is unusable: logged and reported once, then treated as absent. */
export function warnInvalidAnnotation(
  sink: WarningSink,
  body: KubeObject,
  key: string,
  problem: string,
  consequence: string,
): void {
  const raw = body.metadata?.annotations?.[key] ?? '';
  warnOnce(sink, body, {
    subject: `annotation\u0000${key}\u0000${raw}`,
    reason: 'InvalidAnnotation',
    message: `annotation ${key} is unusable (${problem}); ${consequence}`,
  });
}

/**
 * A stored bookkeeping record that is unusable (an annotation, or a field of `status["<identity>"]`
 * with status storage): logged and reported once, then treated as absent.
 */
export function warnInvalidRecord(
  sink: WarningSink,
  body: KubeObject,
  location: string,
  raw: string,
  problem: string,
  consequence: string,
): void {
  const annotation = location.startsWith('annotation ');
  warnOnce(sink, body, {
    subject: `${location}\u0000${raw}`,
    reason: annotation ? 'InvalidAnnotation' : 'InvalidStatus',
    message: `${location} is unusable (${problem}); ${consequence}`,
  });
}
