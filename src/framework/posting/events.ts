import { currentEventScope, type EventScope } from './event-scope.js';
import type { EventType, InvolvedObject } from './event-types.js';

export {
  EventPoster,
  type EventPosterOptions,
  type EventSink,
  type EventType,
  type InvolvedObject,
} from './event-poster.js';

let warnedOutsideOperator = false;

/**
 * Posts through `scope`, or, without one, through the scope of the operator running the caller.
 * Outside every operator the Event is dropped, with one process warning so the mistake shows.
 */
function post(
  scope: EventScope | undefined,
  object: InvolvedObject,
  type: EventType,
  reason: string,
  message: string,
): void {
  const target = scope ?? currentEventScope();
  if (target) {
    target.poster?.post(object, type, reason, message);
    return;
  }
  if (warnedOutsideOperator) return;
  warnedOutsideOperator = true;
  process.emitWarning(
    `konductor: the Event ${reason} was dropped: events.* was called outside any running operator's handlers`,
    {
      code: 'KONDUCTOR_EVENT_OUTSIDE_OPERATOR',
    },
  );
}

/**
 * Post Kubernetes Events about an object from handlers, without waiting. The Event goes to the
 * operator running the handler (found through the async context, so code a handler calls or starts
 * works too); while that operator is stopped the Event is dropped. Called outside every operator's
 * work, the Event is dropped and the process warns once. In a handler, `ctx.events` does the same
 * for the handler's object.
 * @example events.warn(body, 'BackupFailed', 'bucket not reachable');
 */
export const events = {
  /** A Normal Event about `object`. */
  info(object: InvolvedObject, reason: string, message: string): void {
    post(undefined, object, 'Normal', reason, message);
  },
  /** A Warning Event about `object`. */
  warn(object: InvolvedObject, reason: string, message: string): void {
    post(undefined, object, 'Warning', reason, message);
  },
  /** A Warning Event about `object` (Kubernetes has no Error type). */
  error(object: InvolvedObject, reason: string, message: string): void {
    post(undefined, object, 'Warning', reason, message);
  },
};

/**
 * A handler's Events (`ctx.events`): `info`, `warn` and `error` are about the handler's object;
 * `post` is about any other object. They go to the operator that built the context, without waiting.
 * @example ctx.events.info('Provisioned', 'backend ready');
 */
export interface ObjectEvents {
  /** A Normal Event about the handler's object. */
  info(reason: string, message: string): void;
  /** A Warning Event about the handler's object. */
  warn(reason: string, message: string): void;
  /** A Warning Event about the handler's object (Kubernetes has no Error type). */
  error(reason: string, message: string): void;
  /** An Event of `type` about another object (e.g. a child the handler manages). */
  post(object: InvolvedObject, type: EventType, reason: string, message: string): void;
}

/**
 * The Events of a handler context for `object`, bound to the operator whose work builds the context
 * (or, when built outside one, to whichever operator runs the caller later, as {@link events}).
 */
export function objectEvents(
  object: InvolvedObject,
  scope: EventScope | undefined = currentEventScope(),
): ObjectEvents {
  return {
    info: (reason, message) => post(scope, object, 'Normal', reason, message),
    warn: (reason, message) => post(scope, object, 'Warning', reason, message),
    error: (reason, message) => post(scope, object, 'Warning', reason, message),
    post: (other, type, reason, message) => post(scope, other, type, reason, message),
  };
}
