import type { KubeObject } from '../objects/kube-object.js';

/** Kubernetes Event types. */
export type EventType = 'Normal' | 'Warning';

/** What an Event is about: any object with a kind and metadata (typed objects without an index signature included). */
export type InvolvedObject = Pick<KubeObject, 'apiVersion' | 'kind' | 'metadata'>;

/** Where Events go: an `EventPoster`, or a fake in specs. */
export interface EventSink {
  post(object: InvolvedObject, type: EventType, reason: string, message: string): void;
}
