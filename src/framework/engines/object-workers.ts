import { detached } from '../observability/tracing.js';
import { matchesObject, type ObjectFilters } from '../intents/filters.js';
import type { FilterScope } from '../intents/filter-context.js';
import type { KubeObject } from '../objects/kube-object.js';

/** A handler the engine runs one worker of per matching object: a timer or a daemon. */
export interface WorkerHandler {
  id: string;
  /** `finalizer: false`: this handler never makes its objects carry the framework finalizer. */
  options: ObjectFilters & { finalizer?: boolean };
}

/** What a new worker is given when its object starts matching its handler. */
export interface WorkerSeed<H extends WorkerHandler> {
  handler: H;
  /** The object's newest observed state (read it each time: it follows the object, even while the worker exits). */
  readonly body: KubeObject;
  /** Aborted once the engine stops this worker: the object stopped matching, is deleted, or the engine stops. */
  stopping: AbortSignal;
  /**
   * Settles when the previous worker of the same handler on the same object has exited (or was
   * abandoned); undefined when there is none. The worker must not do its work before: never two at once.
   */
  handOver?: Promise<void>;
}

/** A started worker, as the engine drives it. */
export interface RunningWorker {
  /** Settles when the worker's loop has ended, by itself or after a stop. */
  done: Promise<void>;
  /** The object changed and still matches. */
  observe?(body: KubeObject): void;
  /**
   * Called once after `stopping` aborted; resolves when the worker exited or was given up on.
   * Without it, stopping waits for `done`.
   */
  stop?(): Promise<void>;
}

export interface ObjectWorkersOptions<H extends WorkerHandler> {
  handlers: readonly H[];
  /** Starts a worker; it must begin at once (synchronously) and end once `seed.stopping` aborts. */
  start(seed: WorkerSeed<H>): RunningWorker;
  /** An object's workers were stopped because it is deleted or gone (or the engine stops). */
  forget?(uid: string): void;
  /** memo: what `when` filters see besides the object (its resource and memo). */
  scope?: FilterScope;
}

interface Worker {
  running: RunningWorker;
  stopping: AbortController;
  handOver?: Promise<void>;
  /** The loop ended by itself: the worker stays registered, so it is not started again while the object matches. */
  ended: boolean;
  /** Memoised: a worker is stopped once, however many callers ask. */
  exit?: Promise<void>;
}

interface WorkedObject {
  body: KubeObject;
  workers: Map<string, Worker>;
  /** Stopped workers still exiting, by handler id; each also covers the workers it took over from. */
  exiting: Map<string, Promise<void>>;
}

/**
 * One worker per (object, handler): started when an object appears or starts matching the handler's
 * filters, stopped when it stops matching, is deleted, or the engine stops. A worker started while
 * the previous one for the same (object, handler) is still exiting is handed that exit, so the two
 * never work at once. Timers and daemons are two kinds of worker on this engine.
 */
export class ObjectWorkers<H extends WorkerHandler> {
  private readonly objects = new Map<string, WorkedObject>();
  /** Workers stopped but not ended (abandoned after their cancellation timeout), by object uid. */
  private readonly abandoned = new Map<string, Set<Worker>>();
  private stopping = false;

  constructor(private readonly options: ObjectWorkersOptions<H>) {}

  /**
   * Whether a handler that holds its objects with the framework finalizer (`finalizer` not `false`)
   * applies to the object: then its deletion waits for these workers to stop.
   */
  applies(body: KubeObject): boolean {
    return this.options.handlers.some(
      (handler) =>
        handler.options.finalizer !== false &&
        matchesObject(body, handler.options, this.options.scope),
    );
  }

  /** Takes the newest state of an object: starts, updates or stops its workers. */
  observe(body: KubeObject): void {
    const uid = body.metadata?.uid;
    if (!uid || this.stopping) return;
    if (body.metadata?.deletionTimestamp) {
      void this.stopObject(uid);
      return;
    }
    let object = this.objects.get(uid);
    if (!object) {
      object = { body, workers: new Map(), exiting: new Map() };
      this.objects.set(uid, object);
    }
    object.body = body;
    for (const handler of this.options.handlers) {
      const worker = object.workers.get(handler.id);
      const matches = matchesObject(body, handler.options, this.options.scope);
      if (matches && !worker) object.workers.set(handler.id, this.spawn(object, handler));
      else if (!matches && worker) this.retire(uid, object, handler.id, worker);
      else if (worker && !worker.ended) worker.running.observe?.(body);
    }
    this.forgetIfIdle(uid, object);
  }

  /** Stops an object's workers (deleted, or gone); resolves once they, and any still exiting, have exited. */
  async stopObject(uid: string): Promise<void> {
    const object = this.objects.get(uid);
    this.options.forget?.(uid);
    if (!object) return;
    for (const [id, worker] of object.workers) this.retire(uid, object, id, worker);
    await Promise.all(object.exiting.values());
  }

  /** Stops every worker (operator shutdown, lost leadership); no worker starts after it. */
  async stopAll(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.objects.keys()].map((uid) => this.stopObject(uid)));
  }

  /** Objects with at least one worker. */
  get objectCount(): number {
    let count = 0;
    for (const object of this.objects.values()) if (object.workers.size > 0) count += 1;
    return count;
  }

  /** Workers whose loop has not ended by itself (exiting ones are not counted). */
  get activeCount(): number {
    let count = 0;
    for (const object of this.objects.values())
      for (const worker of object.workers.values()) if (!worker.ended) count += 1;
    return count;
  }

  private spawn(object: WorkedObject, handler: H): Worker {
    const stopping = new AbortController();
    const handOver = object.exiting.get(handler.id);
    const seed: WorkerSeed<H> = {
      handler,
      get body() {
        return object.body;
      },
      stopping: stopping.signal,
      handOver,
    };
    // Spawned from inside an object's run: a worker must not stay part of that run's trace.
    const running = detached(() => this.options.start(seed));
    const worker: Worker = { running, stopping, handOver, ended: false };
    running.done.then(
      () => (worker.ended = true),
      () => (worker.ended = true),
    );
    return worker;
  }

  /** Stops a worker and keeps its exit (with the exits it took over) until it settles, for the next worker to wait on. */
  private retire(uid: string, object: WorkedObject, id: string, worker: Worker): void {
    if (object.workers.get(id) === worker) object.workers.delete(id);
    if (!worker.exit) {
      worker.stopping.abort();
      worker.exit = worker.running.stop?.() ?? worker.running.done;
    }
    void worker.exit.then(() => {
      if (!worker.ended) this.abandon(uid, worker);
    });
    const exited = Promise.allSettled([worker.exit, worker.handOver]).then(() => undefined);
    object.exiting.set(id, exited);
    void exited.then(() => {
      if (object.exiting.get(id) === exited) object.exiting.delete(id);
      this.forgetIfIdle(uid, object);
    });
  }

  /**
   * Whether a worker of the object was stopped but still runs (abandoned after its cancellation
   * timeout): handing the object to another replica now would run two at once.
   */
  stillRunning(uid: string): boolean {
    return (this.abandoned.get(uid)?.size ?? 0) > 0;
  }

  private abandon(uid: string, worker: Worker): void {
    const workers = this.abandoned.get(uid) ?? new Set<Worker>();
    this.abandoned.set(uid, workers);
    workers.add(worker);
    void worker.running.done.finally(() => {
      workers.delete(worker);
      if (workers.size === 0 && this.abandoned.get(uid) === workers) this.abandoned.delete(uid);
    });
  }

  /** Drops an object with neither workers nor exits: nothing reads its state any more. */
  private forgetIfIdle(uid: string, object: WorkedObject): void {
    if (object.workers.size === 0 && object.exiting.size === 0 && this.objects.get(uid) === object)
      this.objects.delete(uid);
  }
}
