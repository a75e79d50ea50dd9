import type { ResourceSelector } from '../api/resource.js';
import type { Logger } from '../observability/logger.js';
import type { KubeObject } from '../watching/events.js';

/** What an `@on.event` handler receives: one raw watch event. */
export interface EventContext<T extends KubeObject = KubeObject> {
  /** The watch event type. */
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  /** The object as the event carried it. */
  body: T;
  name: string;
  namespace: string | undefined;
  uid: string;
  /** A logger bound to this object and handler. */
  logger: Logger;
  /** Aborted when the operator stops. */
  signal: AbortSignal;
}

/** An `@on.event` handler function. */
export type EventHandlerFn<T extends KubeObject = KubeObject> = (context: EventContext<T>) => unknown;

/** Options shared by all handlers. */
export interface HandlerOptions<T extends KubeObject = KubeObject> {
  /** Stable id; defaults to `Class.method`. Progress records are keyed by it. */
  id?: string;
  /** Only objects for which this returns true reach the handler. */
  when?: (object: T) => boolean;
  /** Sent to the API server, so non-matching objects never reach the operator (e.g. `app=db,tier!=cache`). */
  labelSelector?: string;
  /** Sent to the API server (e.g. `metadata.name=main`). */
  fieldSelector?: string;
}

/** A registered `@on.event` handler. */
export interface EventHandlerSpec {
  kind: 'event';
  id: string;
  resource: ResourceSelector;
  options: HandlerOptions;
  fn: EventHandlerFn;
}

/** Every kind of handler the registry holds. */
export type HandlerSpec = EventHandlerSpec;

/** A handler as a decorator records it on a class, before the class is instantiated. */
export interface HandlerDeclaration {
  kind: HandlerSpec['kind'];
  resource: ResourceSelector;
  options: HandlerOptions;
  method: string | symbol;
}
