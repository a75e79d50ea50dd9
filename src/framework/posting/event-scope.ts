import { AsyncLocalStorage } from 'node:async_hooks';
import type { EventSink } from './event-poster.js';

const storage = new AsyncLocalStorage<EventScope>();

/**
 * One operator's Events as its async work sees them. The operator runs its watches, reactor and
 * engines inside {@link run}, so every handler call and every continuation of it (timers, promises,
 * streams) finds this scope, and with it this operator's poster, without a process-wide variable:
 * two operators in one process keep their Events apart, and stopping one leaves the other's alone.
 * The scope is open while the operator works; Events posted through it while closed are dropped.
 */
export class EventScope {
  private open = false;

  constructor(private readonly sink: EventSink) {}

  /** Runs `fn` (and everything it starts) inside this scope. */
  run<T>(fn: () => T): T {
    return storage.run(this, fn);
  }

  /** Events posted through the scope reach the sink from now on (the operator started working). */
  activate(): void {
    this.open = true;
  }

  /** Events posted through the scope are dropped from now on (the operator stopped working). */
  deactivate(): void {
    this.open = false;
  }

  /** The sink while the scope is open, else undefined. */
  get poster(): EventSink | undefined {
    return this.open ? this.sink : undefined;
  }
}

/** The scope of the operator whose work is running now, if any. */
export function currentEventScope(): EventScope | undefined {
  return storage.getStore();
}
