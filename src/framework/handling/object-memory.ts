import type { Patch } from '../handler/patch.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { ProgressRecord } from '../state/progress.js';

/** Our last write to an object, kept until the watch delivers it (read-your-writes). */
export interface OwnWrite {
  resourceVersion: string;
  body: KubeObject;
  /** When we wrote it (epoch ms). */
  at: number;
}

/** A handler's finished run: the patch it made and its final progress record. */
export interface HandlerResult {
  patch: Patch;
  record: ProgressRecord;
}

/**
 * Everything the change processor remembers about one object between runs, in one record (Kopf's
 * per-object memo) so that one call forgets it all when the object is gone. Only this process's
 * knowledge lives here; what must survive a restart is in the object's annotations.
 */
export interface ObjectMemory {
  /** Our last write until the watch delivers it. */
  ownWrite?: OwnWrite;
  /** This process has looked at the object (to tell resumed objects from new ones). */
  seen: boolean;
  /** First seen through a listing and not yet fully handled: resume handlers stay due until then (Kopf's `initial`). */
  resuming: boolean;
  /** Consecutive framework-level failures (write errors), for backoff. */
  failures: number;
  /** We handled its deletion while holding it, so optional delete handlers do not run again when it is gone. */
  deletionHandled: boolean;
  /**
   * Finished handler runs whose result could not be written (API server down, 5xx, 403), with the state
   * they ran for. While the object stays in that state, a retry writes these results instead of running
   * the handlers again, so an outage does not repeat side effects.
   */
  unwritten?: { state: string; results: Map<string, HandlerResult> };
  /**
   * A write the API server refused as invalid (400, 422), with the state it was for: after the last
   * attempt the object waits for its next change instead of looping.
   */
  refused?: { state: string; attempts: number };
  /** Digests of the warnings already posted (kind and subject), so a bad annotation or write gives one Event, not one per retry. */
  warned: Set<string>;
}

/**
 * One object's memory as a record of fixed shape (every field set in the constructor, so V8 keeps it a
 * small fast object), whose warning digests get a Set only once there is a warning: an empty Set is
 * about 230 bytes, and the change processor keeps one memory per object it watches.
 */
class MemoryRecord implements ObjectMemory {
  ownWrite: OwnWrite | undefined = undefined;
  seen = false;
  resuming = false;
  failures = 0;
  deletionHandled = false;
  unwritten: ObjectMemory['unwritten'] = undefined;
  refused: ObjectMemory['refused'] = undefined;
  private digests: Set<string> | undefined = undefined;

  get warned(): Set<string> {
    this.digests ??= new Set();
    return this.digests;
  }
}

/** The per-object memories of one change processor, by object uid. */
export class ObjectMemories {
  private readonly byUid = new Map<string, ObjectMemory>();

  /** The object's memory, empty on first use. */
  of(uid: string): ObjectMemory {
    let memory = this.byUid.get(uid);
    if (!memory) {
      memory = new MemoryRecord();
      this.byUid.set(uid, memory);
    }
    return memory;
  }

  /** Forgets everything about the object: it is gone. */
  forget(uid: string): void {
    this.byUid.delete(uid);
  }
}
