import {
  ObjectWorkers,
  type RunningWorker,
  type WorkerHandler,
  type WorkerSeed,
} from '../../../src/framework/engines/object-workers.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { WIDGET_API_VERSION, widget } from '../../support/widget-objects.js';

/**
 * The per-object worker engine timers and daemons run on, with workers that do nothing but record
 * what the engine asks of them and exit when the spec says so.
 */

const gold = { tier: 'gold' };

/** Lets pending promise callbacks run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

interface FakeWorker {
  seed: WorkerSeed<WorkerHandler>;
  observed: KubeObject[];
  stopCalls: number;
  /** Whether the previous worker's exit (if any) has settled. */
  handedOver: boolean;
  /** Ends the worker's loop. */
  exit(): void;
  exited: boolean;
}

/** An engine whose workers exit only when told to (`exit()`), with their own `stop` if `withStop`. */
function engineWith(options: { handlers?: WorkerHandler[]; withStop?: boolean } = {}) {
  const workers: FakeWorker[] = [];
  const forgotten: string[] = [];
  const engine = new ObjectWorkers<WorkerHandler>({
    handlers: options.handlers ?? [{ id: 'h', options: { labels: gold } }],
    start: (seed): RunningWorker => {
      let exit: () => void = () => undefined;
      const done = new Promise<void>((resolve) => (exit = resolve));
      const worker: FakeWorker = {
        seed,
        observed: [],
        stopCalls: 0,
        handedOver: seed.handOver === undefined,
        exit,
        exited: false,
      };
      void done.then(() => (worker.exited = true));
      void seed.handOver?.then(() => (worker.handedOver = true));
      workers.push(worker);
      return {
        done,
        observe: (body) => worker.observed.push(body),
        ...(options.withStop
          ? {
              stop: () => {
                worker.stopCalls += 1;
                return done;
              },
            }
          : {}),
      };
    },
    forget: (uid) => forgotten.push(uid),
  });
  return { engine, workers, forgotten };
}

describe('the per-object worker engine', () => {
  test('an object matching a handler gets one worker; one that does not match gets none', () => {
    const { engine, workers } = engineWith();
    engine.observe(widget());
    expect(workers).toHaveLength(0);
    engine.observe(widget({ labels: gold }));
    engine.observe(widget({ labels: gold, resourceVersion: '2' }));
    expect(workers).toHaveLength(1);
    expect(workers[0]?.seed.handler.id).toBe('h');
    expect(engine.objectCount).toBe(1);
    expect(engine.activeCount).toBe(1);
  });

  test('each handler matching an object gets its own worker', () => {
    const { engine, workers } = engineWith({
      handlers: [
        { id: 'a', options: {} },
        { id: 'b', options: { labels: gold } },
        { id: 'c', options: { labels: { tier: 'silver' } } },
      ],
    });
    engine.observe(widget({ labels: gold }));
    expect(workers.map((worker) => worker.seed.handler.id)).toEqual(['a', 'b']);
  });

  test('a worker is told of every later state of its object, and its seed reads the newest one', () => {
    const { engine, workers } = engineWith();
    engine.observe(widget({ labels: gold }));
    const newer = widget({ labels: gold, resourceVersion: '2' });
    engine.observe(newer);
    expect(workers[0]?.observed).toEqual([newer]);
    expect(workers[0]?.seed.body).toBe(newer);
  });

  test('an object that stops matching has its worker stopped: the signal aborts and the worker is no longer counted', () => {
    const { engine, workers } = engineWith();
    engine.observe(widget({ labels: gold }));
    engine.observe(widget());
    expect(workers[0]?.seed.stopping.aborted).toBe(true);
    expect(engine.objectCount).toBe(0);
    expect(engine.activeCount).toBe(0);
  });

  test('an object being deleted has its workers stopped and is forgotten', () => {
    const { engine, workers, forgotten } = engineWith();
    engine.observe(widget({ labels: gold }));
    engine.observe(widget({ labels: gold, deleting: true }));
    expect(workers[0]?.seed.stopping.aborted).toBe(true);
    expect(forgotten).toEqual(['uid-1']);
    expect(workers).toHaveLength(1);
  });

  test('a worker that ended by itself is not started again while its object keeps matching', async () => {
    const { engine, workers } = engineWith();
    engine.observe(widget({ labels: gold }));
    workers[0]?.exit();
    await settle();
    engine.observe(widget({ labels: gold, resourceVersion: '2' }));
    expect(workers).toHaveLength(1);
    expect(workers[0]?.observed).toEqual([]);
    expect(engine.activeCount).toBe(0);
  });

  test('a worker started while the previous one is still exiting is handed its exit, which settles only once that worker exited', async () => {
    const { engine, workers } = engineWith();
    engine.observe(widget({ labels: gold }));
    engine.observe(widget());
    engine.observe(widget({ labels: gold }));
    expect(workers).toHaveLength(2);
    await settle();
    expect(workers[1]?.handedOver).toBe(false);
    workers[0]?.exit();
    await settle();
    expect(workers[1]?.handedOver).toBe(true);
  });

  test('a worker stopped before its hand-over settled passes the wait on: the next one waits for the first as well', async () => {
    const { engine, workers } = engineWith();
    engine.observe(widget({ labels: gold }));
    engine.observe(widget());
    engine.observe(widget({ labels: gold }));
    engine.observe(widget());
    workers[1]?.exit(); // the second ends at once, while the first is still exiting
    engine.observe(widget({ labels: gold }));
    await settle();
    expect(workers[2]?.handedOver).toBe(false);
    workers[0]?.exit();
    await settle();
    expect(workers[2]?.handedOver).toBe(true);
  });

  test('a worker started after its object was stopped, while the stopped worker still exits, is handed that exit', async () => {
    const { engine, workers } = engineWith();
    engine.observe(widget({ labels: gold }));
    void engine.stopObject('uid-1');
    engine.observe(widget({ labels: gold }));
    await settle();
    expect(workers[1]?.handedOver).toBe(false);
    workers[0]?.exit();
    await settle();
    expect(workers[1]?.handedOver).toBe(true);
  });

  test('stopping an object waits for its workers, including one still exiting after a mismatch', async () => {
    const { engine, workers } = engineWith({
      handlers: [
        { id: 'a', options: {} },
        { id: 'b', options: { labels: gold } },
      ],
    });
    engine.observe(widget({ labels: gold }));
    engine.observe(widget());
    let stopped = false;
    const stopping = engine.stopObject('uid-1').then(() => (stopped = true));
    workers[0]?.exit();
    await settle();
    expect(stopped).toBe(false);
    workers[1]?.exit();
    await stopping;
    expect(stopped).toBe(true);
  });

  test('a worker is stopped once however many ask: its own stop runs once and every caller waits for it', async () => {
    const { engine, workers } = engineWith({ withStop: true });
    engine.observe(widget({ labels: gold }));
    let finished = 0;
    const first = engine.stopObject('uid-1').then(() => (finished += 1));
    engine.observe(widget({ labels: gold, deleting: true }));
    const second = engine.stopObject('uid-1').then(() => (finished += 1));
    await settle();
    expect(finished).toBe(0);
    workers[0]?.exit();
    await Promise.all([first, second]);
    expect(finished).toBe(2);
    expect(workers[0]?.stopCalls).toBe(1);
  });

  test('stopAll waits for every worker to exit, and no worker starts after it', async () => {
    const { engine, workers } = engineWith();
    engine.observe(widget({ labels: gold }));
    engine.observe(widget({ labels: gold, uid: 'uid-2' }));
    let stopped = false;
    const stopping = engine.stopAll().then(() => (stopped = true));
    workers[0]?.exit();
    await settle();
    expect(stopped).toBe(false);
    workers[1]?.exit();
    await stopping;
    expect(stopped).toBe(true);
    engine.observe(widget({ labels: gold, uid: 'uid-3' }));
    expect(workers).toHaveLength(2);
  });

  test('whether any handler applies to an object is its filters', () => {
    const { engine } = engineWith();
    expect(engine.applies(widget({ labels: gold }))).toBe(true);
    expect(engine.applies(widget())).toBe(false);
  });

  test('an object without a uid is ignored', () => {
    const { engine, workers } = engineWith();
    engine.observe({
      apiVersion: WIDGET_API_VERSION,
      kind: 'Widget',
      metadata: { name: 'w1', labels: gold },
    });
    expect(workers).toHaveLength(0);
  });
});
