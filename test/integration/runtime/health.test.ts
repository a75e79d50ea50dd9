import { CoreV1Api } from '@kubernetes/client-node';
import {
  createOperator,
  on,
  silentLogger,
  type ChangeContext,
  type EventContext,
  type Operator,
} from '../../../src/framework/index.js';
import { HealthServerError } from '../../../src/framework/runtime/health-server.js';
import { TestControlPlane } from '../../../src/testing/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { getWidget, installWidgetCrd, Widgets, WIDGET_API_VERSION } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { widgetNamespace } from '../../support/widget-namespace.js';

const API = WIDGET_API_VERSION;

async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: response.status, body: await response.text() };
}

class Handlers {
  @on.create(API, 'widgets')
  async created({ patch }: ChangeContext): Promise<void> {
    patch.status.phase = 'Ready';
  }
}

describe('health and metrics', () => {
  let operator: Operator | undefined;
  afterEach(async () => {
    await operator?.stop(2_000);
    operator = undefined;
  });

  /** /metrics of an operator (health server on) once it has handled `count` new Widgets of its own namespace. */
  async function metricsAfterHandling(prefix: string, count: number): Promise<string> {
    const { kc, namespace, widgets } = await widgetNamespace(prefix);
    operator = createOperator({
      kubeConfig: kc,
      handlers: [Handlers],
      namespaces: [namespace],
      logger: silentLogger(),
      health: { port: 0, host: '127.0.0.1' },
    }).start();
    const port = (await operator.serveHealth())!;
    await operator.ready;
    for (let i = 0; i < count; i++) await widgets.create(`w${i}`);
    const runs = `konductor_handler_runs_total{handler="created",result="success"} ${count}`;
    // A run counts as it returns; its status PATCH is counted when the API server answers, a little later.
    const patches = /konductor_api_requests_total\{verb="patch",code="200"\} [1-9]/;
    await waitFor(
      async () => {
        const body = (await get(port, '/metrics')).body;
        return body.includes(runs) && patches.test(body);
      },
      { what: `${count} successful runs and their status PATCH in /metrics` },
    );
    return (await get(port, '/metrics')).body;
  }

  test('/metrics shows handler counters moving as objects are handled', async () => {
    const body = await metricsAfterHandling('metrics', 2);
    expect(body).toMatch(
      /konductor_watch_events_total\{resource="widgets\.test\.konductor\.dev\/v1",type="ADDED"\} 2/,
    );
    expect(body).toMatch(/konductor_handler_duration_seconds_count\{handler="created"\} 2/);
    expect(body).toMatch(/konductor_process_resident_memory_bytes \d+/);
  });

  test('/metrics has the series the dashboard reads: API requests by verb and code, queue wait, watch activity and lag, the leader', async () => {
    const body = await metricsAfterHandling('series', 1);
    const resource = 'resource="widgets\\.test\\.konductor\\.dev/v1"';
    expect(body).toMatch(/konductor_api_requests_total\{verb="list",code="200"\} [1-9]/);
    expect(body).toMatch(/konductor_api_requests_total\{verb="watch",code="200"\} [1-9]/);
    expect(body).toMatch(/konductor_api_requests_total\{verb="patch",code="200"\} [1-9]/);
    expect(body).toMatch(/konductor_api_request_duration_seconds_count\{verb="patch"\} [1-9]/);
    expect(body).toMatch(/konductor_reactor_queue_wait_seconds_count [1-9]/);
    expect(body).toMatch(
      new RegExp(`konductor_watch_last_activity_timestamp_seconds\\{${resource}\\} \\d{10}`),
    );
    expect(body).toMatch(new RegExp(`konductor_watch_lag_seconds_count\\{${resource}\\} [1-9]`));
    expect(body).toMatch(/konductor_leader 1/);
  });

  test('/readyz says what it waits for while a resource is not served yet', async () => {
    const kc = sharedKubeConfig();
    const namespace = await uniqueNamespace(kc, 'ready');
    class Missing {
      @on.create('missing.konductor.dev/v1', 'things')
      async created(_: ChangeContext): Promise<void> {}
    }
    operator = createOperator({
      kubeConfig: kc,
      handlers: [Missing],
      namespaces: [namespace],
      logger: silentLogger(),
      health: { port: 0, host: '127.0.0.1' },
    }).start();
    const port = (await operator.serveHealth())!;

    const ready = await get(port, '/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toContain('listings: waiting for the initial listing');
    expect((await get(port, '/healthz')).status).toBe(200);
  });

  test('a second operator on a health port already taken refuses to start, naming the port and what to do; the first keeps serving', async () => {
    const { kc, namespace } = await widgetNamespace('port');
    operator = createOperator({
      kubeConfig: kc,
      handlers: [Handlers],
      namespaces: [namespace],
      logger: silentLogger(),
      health: { port: 0, host: '127.0.0.1' },
    }).start();
    const port = (await operator.serveHealth())!;
    await operator.ready;

    const second = createOperator({
      kubeConfig: kc,
      handlers: [Handlers],
      namespaces: [namespace],
      logger: silentLogger(),
      health: { port, host: '127.0.0.1' },
    });
    try {
      second.start();
      await expect(second.ready).rejects.toThrow(
        `the health server cannot listen on 127.0.0.1:${port}: the port is already in use (EADDRINUSE); free it, or set another port with --health-port`,
      );
      await expect(second.serveHealth()).rejects.toBeInstanceOf(HealthServerError);
    } finally {
      await second.stop(0);
    }
    expect(second.active).toBe(false);
    expect(await get(port, '/healthz')).toEqual({ status: 200, body: 'ok\n' });
    expect((await get(port, '/readyz')).status).toBe(200);
  });

  // Stalls the API server, so it runs on a control plane of its own.
  test('/healthz fails while the API server is stalled (SIGSTOP), and recovers once it answers again', async () => {
    const plane = await TestControlPlane.start();
    try {
      const kc = plane.kubeConfig();
      await installWidgetCrd(kc);
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: 'stall' } } });
      operator = createOperator({
        kubeConfig: kc,
        handlers: [Handlers],
        namespaces: ['stall'],
        logger: silentLogger(),
        health: { port: 0, host: '127.0.0.1', watchStall: 3 },
        watch: { idleTimeout: 1, reconnect: { max: 0.5 } },
      }).start();
      const port = (await operator.serveHealth())!;
      await operator.ready;
      expect((await get(port, '/healthz')).status).toBe(200);

      plane.apiServer.signal('SIGSTOP');
      try {
        await waitFor(async () => (await get(port, '/healthz')).status === 503, {
          what: '/healthz to fail',
          timeoutMs: 15_000,
        });
        expect((await get(port, '/healthz')).body).toContain(
          'watches: no answer from the API server',
        );
      } finally {
        plane.apiServer.signal('SIGCONT');
      }
      await waitFor(async () => (await get(port, '/healthz')).status === 200, {
        what: '/healthz to recover',
        timeoutMs: 20_000,
      });
    } finally {
      await operator?.stop(2_000);
      operator = undefined;
      await plane.stop();
    }
  });

  describe('hung handlers', () => {
    /** Holds every run of `created` for a widget named `stuck` until released. */
    let release: () => void = () => undefined;
    let hold = new Promise<void>((resolve) => (release = resolve));

    class Hanging {
      @on.create(API, 'widgets')
      async created({ name, patch }: ChangeContext): Promise<void> {
        if (name === 'stuck') await hold;
        patch.status.phase = 'Ready';
      }
    }

    afterEach(() => {
      release();
      hold = new Promise<void>((resolve) => (release = resolve));
    });

    test('/healthz fails, saying why, while objects wait behind a handler holding every slot, and recovers once it ends', async () => {
      const { kc, namespace } = await widgetNamespace('stall');
      operator = createOperator({
        kubeConfig: kc,
        handlers: [Hanging],
        namespaces: [namespace],
        concurrency: 1,
        logger: silentLogger(),
        health: { port: 0, host: '127.0.0.1', handlerStall: 1 },
      }).start();
      const port = (await operator.serveHealth())!;
      await operator.ready;
      const widgets = new Widgets(kc, namespace);
      await widgets.create('stuck');
      await widgets.create('waiting');
      await waitFor(async () => (await get(port, '/healthz')).status === 503, {
        what: '/healthz to report the stall',
      });
      const { body } = await get(port, '/healthz');
      expect(body).toMatch(
        /^handlers: no handler run has finished for \d+ s while 1 object\(s\) wait and 1 run\(s\) hold every slot: handlers are hung/m,
      );

      release();
      await waitFor(async () => (await getWidget(namespace, 'waiting')).status?.phase === 'Ready', {
        what: 'the waiting widget to be handled',
      });
      await waitFor(async () => (await get(port, '/healthz')).status === 200, {
        what: '/healthz to recover',
      });
    });

    test('with a handler timeout, an @on.event handler that hangs is abandoned and the objects behind it are handled', async () => {
      const { kc, namespace } = await widgetNamespace('hung-event');
      const abandoned: string[] = [];
      class Observers {
        @on.event(API, 'widgets')
        async observed({ name, signal }: EventContext): Promise<void> {
          if (name !== 'stuck') return;
          signal.addEventListener('abort', () => abandoned.push(name), { once: true });
          await new Promise<never>(() => undefined); // hangs, ignoring its signal
        }

        @on.create(API, 'widgets')
        async created({ patch }: ChangeContext): Promise<void> {
          patch.status.phase = 'Ready';
        }
      }
      operator = createOperator({
        kubeConfig: kc,
        handlers: [Observers],
        namespaces: [namespace],
        concurrency: 1,
        handlerTimeout: 1,
        logger: silentLogger(),
        health: { port: 0, host: '127.0.0.1' },
      }).start();
      const port = (await operator.serveHealth())!;
      await operator.ready;
      const widgets = new Widgets(kc, namespace);
      await widgets.create('stuck');
      await widgets.create('after');
      await waitFor(async () => (await getWidget(namespace, 'after')).status?.phase === 'Ready', {
        what: 'the widget behind the hung handler to be handled',
      });
      expect(abandoned.length).toBeGreaterThanOrEqual(1);
      const metrics = (await get(port, '/metrics')).body;
      expect(metrics).toMatch(
        /konductor_handler_runs_total\{handler="observed",result="failure"\} [1-9]/,
      );
    });
  });
});
