import { createHash } from 'node:crypto';

/** The identity a reported problem is remembered under. */
export interface ReportedObject {
  metadata?: { uid?: string; generation?: number };
}

/** Remembered problems over all objects; past it the objects reported longest ago are forgotten first. */
const MAX_REMEMBERED = 20_000;

/**
 * Remembers the problems already reported, so each is one Warning Event per (object uid, generation,
 * message) rather than one per render: a busy cluster renders every Prometheus on every monitor or
 * rule change, and a problem that did not change must not post again. Memory is bounded: messages
 * are kept as short hashes, a new generation of an object replaces what its older one had, objects
 * that are gone are dropped by {@link retain}, and past {@link MAX_REMEMBERED} problems the objects
 * reported longest ago are forgotten (and would be reported once more).
 */
export class ReportedProblems {
  private readonly byObject = new Map<
    string,
    { generation: number | undefined; messages: Set<string> }
  >();
  private count = 0;

  constructor(private readonly limit = MAX_REMEMBERED) {}

  /**
   * True the first time `message` is seen for this object generation. An object without a uid
   * (never stored) is always reported.
   */
  firstTime(object: ReportedObject, message: string): boolean {
    const uid = object.metadata?.uid;
    if (uid === undefined || uid === '') return true;
    const generation = object.metadata?.generation;
    let entry = this.byObject.get(uid);
    if (entry !== undefined && entry.generation !== generation) {
      this.forget(uid);
      entry = undefined;
    }
    const digest = createHash('sha256').update(message).digest('base64').slice(0, 22);
    if (entry?.messages.has(digest)) return false;
    if (entry === undefined) entry = { generation, messages: new Set() };
    // Re-inserted, so Map order is least recently reported first.
    this.byObject.delete(uid);
    this.byObject.set(uid, entry);
    entry.messages.add(digest);
    this.count += 1;
    for (const oldest of this.byObject.keys()) {
      if (this.count <= this.limit || oldest === uid) break;
      this.forget(oldest);
    }
    return true;
  }

  /** Forgets every object whose uid is not in `live` (the objects still in the cache). */
  retain(live: ReadonlySet<string>): void {
    for (const uid of [...this.byObject.keys()]) if (!live.has(uid)) this.forget(uid);
  }

  /** How many problems are remembered. */
  get size(): number {
    return this.count;
  }

  private forget(uid: string): void {
    this.count -= this.byObject.get(uid)?.messages.size ?? 0;
    this.byObject.delete(uid);
  }
}
