/**
 * A first-in-first-out line of one kind of entry, as an array with a moving head: O(1) at both ends
 * and one pointer per entry, where a queue of closures and promises costs hundreds of bytes per entry
 * (measured: about 820 bytes per object queued in p-queue, 82 MB for a 100,000-object listing).
 */
class Line<E> {
  private items: (E | undefined)[] = [];
  private head = 0;
  /** Absolute position of `items[0]`. */
  private offset = 0;

  /** Absolute position the next entry gets; positions only grow, so a stale entry is recognisable. */
  get tail(): number {
    return this.offset + this.items.length;
  }

  push(entry: E): number {
    const position = this.tail;
    this.items.push(entry);
    return position;
  }

  /** The oldest entry and its absolute position, or undefined when empty. */
  shift(): { entry: E; position: number } | undefined {
    if (this.head >= this.items.length) return undefined;
    const entry = this.items[this.head] as E;
    this.items[this.head] = undefined;
    const position = this.offset + this.head;
    this.head += 1;
    // Drop the consumed front now and then, so memory follows the entries waiting, not all ever queued.
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.offset += this.head;
      this.head = 0;
    }
    return { entry, position };
  }

  clear(): void {
    this.offset = this.tail;
    this.items = [];
    this.head = 0;
  }
}

/** What the queue needs to know of an entry: where it is queued now, if anywhere. */
export interface QueueTicket {
  /** The line the entry waits in (its priority), or undefined when it does not wait. */
  queuedPriority?: number;
  /** Its position in that line. */
  queuedPosition?: number;
}

/**
 * Entries waiting for a run, by priority (higher first), first in first out within a priority. An
 * entry waits at most once: queueing it again (for example at a higher priority) moves it, and its
 * old place is skipped when reached. Each entry records its own place ({@link QueueTicket}), so the
 * queue holds one pointer per waiting entry and nothing else.
 */
export class RunQueue<E extends QueueTicket> {
  private readonly lines = new Map<number, Line<E>>();
  /** Priorities present, highest first. */
  private priorities: number[] = [];
  private waiting = 0;

  /** Entries waiting. */
  get size(): number {
    return this.waiting;
  }

  /** Queues `entry` at `priority`, at the back of that priority's line (moving it if it already waits). */
  add(entry: E, priority: number): void {
    if (entry.queuedPriority === undefined) this.waiting += 1;
    entry.queuedPriority = priority;
    entry.queuedPosition = this.line(priority).push(entry);
  }

  /** Whether `entry` waits. */
  has(entry: E): boolean {
    return entry.queuedPriority !== undefined;
  }

  /** Takes the entry to run next: the oldest of the highest priority; undefined when none waits. */
  take(): E | undefined {
    for (const priority of this.priorities) {
      const line = this.lines.get(priority)!;
      for (let next = line.shift(); next; next = line.shift()) {
        const { entry, position } = next;
        // A place left behind when the entry was moved, or when it was taken and queued again.
        if (entry.queuedPriority !== priority || entry.queuedPosition !== position) continue;
        entry.queuedPriority = undefined;
        entry.queuedPosition = undefined;
        this.waiting -= 1;
        return entry;
      }
    }
    return undefined;
  }

  /** Removes `entry` from the queue, if it waits. */
  remove(entry: E): void {
    if (entry.queuedPriority === undefined) return;
    entry.queuedPriority = undefined;
    entry.queuedPosition = undefined;
    this.waiting -= 1;
  }

  /** Drops every waiting entry (their tickets are reset as they are found; callers drop the entries). */
  clear(): void {
    for (const line of this.lines.values()) {
      for (let next = line.shift(); next; next = line.shift()) {
        next.entry.queuedPriority = undefined;
        next.entry.queuedPosition = undefined;
      }
      line.clear();
    }
    this.waiting = 0;
  }

  private line(priority: number): Line<E> {
    let line = this.lines.get(priority);
    if (!line) {
      line = new Line<E>();
      this.lines.set(priority, line);
      this.priorities = [...this.lines.keys()].sort((a, b) => b - a);
    }
    return line;
  }
}
