import type { ObjectEvent } from '../../../src/framework/watching/watch-events.js';
import {
  widgetEvent as sharedWidgetEvent,
  type Widget as SharedWidget,
} from '../../support/widget-objects.js';

/** The shared Widget fixture as the reactor specs feed it: `spec.n` tells successive states of one object apart. */
export interface Widget extends SharedWidget {
  metadata: { uid: string; name: string; namespace: string; resourceVersion: string };
  spec: { n: number };
}

export type WidgetEvent = ObjectEvent<Widget>;

/** An event for object `uid` in state `n` (its resourceVersion is `n` too). */
export function widgetEvent(
  uid: string,
  n: number,
  options: { type?: WidgetEvent['type']; fromList?: boolean } = {},
): WidgetEvent {
  return sharedWidgetEvent(
    { uid, name: `widget-${uid}`, resourceVersion: String(n), spec: { n } },
    options,
  ) as WidgetEvent;
}

export interface Deferred<T = void> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(reason: unknown): void;
}

/** A promise settled from outside, to hold a processor in the middle of a run. */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets pending promise callbacks and I/O run once. */
export function tick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** How the reactor specs poll with the shared `waitFor` (test/support/wait-for): every 2 ms. */
export const often = { intervalMs: 2 } as const;

/** Counts runs in progress, overall and per object, and remembers the highest counts seen. */
export class ConcurrencyTracker {
  current = 0;
  max = 0;
  /** Highest number of simultaneous runs seen for any single object. */
  maxPerObject = 0;
  private readonly perObject = new Map<string, number>();

  enter(uid: string): void {
    this.current += 1;
    this.max = Math.max(this.max, this.current);
    const n = (this.perObject.get(uid) ?? 0) + 1;
    this.perObject.set(uid, n);
    this.maxPerObject = Math.max(this.maxPerObject, n);
  }

  leave(uid: string): void {
    this.current -= 1;
    const n = (this.perObject.get(uid) ?? 1) - 1;
    if (n === 0) this.perObject.delete(uid);
    else this.perObject.set(uid, n);
  }
}
