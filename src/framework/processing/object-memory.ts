import type { Patch } from '../intents/patch.js';
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
  /** First seen in a listing or arriving (ADDED), not yet fully handled: resume handlers stay due (Kopf's `initial`). */
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

function isEmpty(rare: RareMemory): boolean {
  return (
    rare.unwritten === undefined &&
    rare.refused === undefined &&
    (rare.warned === undefined || rare.warned.size === 0)
  );
}

const SEEN = 1;
const RESUMING = 2;
const DELETION_HANDLED = 4;

/** What few objects ever need: kept apart, so the usual record does not carry three empty fields. */
interface RareMemory {
  unwritten?: ObjectMemory['unwritten'];
  refused?: ObjectMemory['refused'];
  warned?: Set<string>;
}

/**
 * One object's memory in four fields (flags in one number, the rarely used fields in an object made on
 * first use), every field set in the constructor so V8 keeps it one small fast object: the change
 * processor keeps a memory for every object it has looked at, and an empty Set for the warning
 * digests alone was about 230 bytes per object.
 */
class MemoryRecord implements ObjectMemory {
  ownWrite: OwnWrite | undefined = undefined;
  failures = 0;
  private flags = 0;
  private rare: RareMemory | undefined = undefined;

  get seen(): boolean {
    return (this.flags & SEEN) !== 0;
  }
  set seen(value: boolean) {
    this.flag(SEEN, value);
  }
  get resuming(): boolean {
    return (this.flags & RESUMING) !== 0;
  }
  set resuming(value: boolean) {
    this.flag(RESUMING, value);
  }
  get deletionHandled(): boolean {
    return (this.flags & DELETION_HANDLED) !== 0;
  }
  set deletionHandled(value: boolean) {
    this.flag(DELETION_HANDLED, value);
  }
  get unwritten(): ObjectMemory['unwritten'] {
    return this.rare?.unwritten;
  }
  set unwritten(value: ObjectMemory['unwritten']) {
    if (value !== undefined || this.rare) (this.rare ??= {}).unwritten = value;
  }
  get refused(): ObjectMemory['refused'] {
    return this.rare?.refused;
  }
  set refused(value: ObjectMemory['refused']) {
    if (value !== undefined || this.rare) (this.rare ??= {}).refused = value;
  }
  get warned(): Set<string> {
    const rare = (this.rare ??= {});
    rare.warned ??= new Set();
    return rare.warned;
  }

  /** Whether this memory says nothing beyond "seen", so it can be kept as that alone. */
  holdsOnlySeen(): boolean {
    return (
      this.flags === SEEN &&
      this.failures === 0 &&
      this.ownWrite === undefined &&
      (this.rare === undefined || isEmpty(this.rare))
    );
  }

  private flag(bit: number, value: boolean): void {
    this.flags = value ? this.flags | bit : this.flags & ~bit;
  }
}

/** The per-object memories of one change processor, by object uid. */
export class ObjectMemories {
  private readonly byUid = new Map<string, MemoryRecord>();
  /**
   * Objects whose memory held nothing but "seen" when their last run ended: one Set entry each (the
   * uid string is the watch's own), instead of a record and a Map entry.
   */
  private readonly seenOnly = new Set<string>();

  /** The object's memory, empty on first use. */
  of(uid: string): ObjectMemory {
    let memory = this.byUid.get(uid);
    if (!memory) {
      memory = new MemoryRecord();
      if (this.seenOnly.delete(uid)) memory.seen = true;
      this.byUid.set(uid, memory);
    }
    return memory;
  }

  /**
   * Called when a run of the object has ended: a memory that holds nothing but "seen" (no write
   * awaiting its echo, no failures, nothing unwritten, refused or warned about) shrinks to a Set entry;
   * {@link of} restores it as it was. An operator watching 100,000 idle objects keeps no record for them.
   */
  settle(uid: string): void {
    const memory = this.byUid.get(uid);
    if (memory?.holdsOnlySeen()) {
      this.byUid.delete(uid);
      this.seenOnly.add(uid);
    }
  }

  /** Forgets everything about the object: it is gone. */
  forget(uid: string): void {
    this.byUid.delete(uid);
    this.seenOnly.delete(uid);
  }

  /** Objects with a full record (the others are seen-only or unknown). */
  get records(): number {
    return this.byUid.size;
  }
}
