import type { KubeObject } from '../objects/kube-object.js';

/** A change to one object, as seen by a watch. `fromList` marks objects that came from a (re)listing. */
export interface ObjectEvent<T extends KubeObject = KubeObject> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: T;
  fromList: boolean;
}

/** Emitted when a listing (initial or after 410 Gone) has been delivered completely. */
export interface SyncedEvent {
  type: 'SYNCED';
}

/** What a watch stream emits. */
export type WatchEvent<T extends KubeObject = KubeObject> = ObjectEvent<T> | SyncedEvent;
