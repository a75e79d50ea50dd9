import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import {
  ApiError,
  createOperator,
  daemon,
  on,
  silentLogger,
  timer,
  type ChangeContext,
  type DaemonContext,
  type Operator,
  type OperatorOptions,
} from '../../../src/framework/index.js';
import { formatMicroTime, type Lease } from '../../../src/framework/runtime/leader-election.js';
import { sharedKubeConfig } from '../../support/cluster.js';
import { LogCapture } from '../../support/log-capture.js';
import { Widgets, WIDGET_API_VERSION } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { type HandlerClass } from '../../../src/framework/registry/registry.js';
import { widgetNamespace } from '../../support/widget-namespace.js';

const API = WIDGET_API_VERSION;
const LOCK = 'operator-lock';
// Short Lease timings keep the specs quick; renewals come every retry period.
const ELECTION = { name: LOCK, leaseDuration: 3, renewDeadline: 2, retryPeriod: 0.5 };

async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: response.status, body: await response.text() };
}

describe('an operator under leader election', () => {
  const operators: Operator[] = [];
  const clients: ApiClient[] = [];
  afterEach(async () => {
    await Promise.all(operators.splice(0).map((operator) => operator.stop(2_000)));
    for (const client of clients.splice(0)) client.close();
  });

  function start(
    namespace: string,
    identity: string,
    handlers: HandlerClass[],
    extra: Partial<OperatorOptions> = {},
  ): Operator {
    const operator = createOperator({
      kubeConfig: sharedKubeConfig(),
      handlers,
      namespaces: [namespace],
      logger: silentLogger(),
      leaderElection: { ...ELECTION, namespace, identity },
      ...extra,
    }).start();
    operators.push(operator);
    return operator;
  }

  test('that loses the Lease stops its change handlers, timers and daemons', async () => {
    const { kc, namespace } = await widgetNamespace('lease-loss');
    const created: string[] = [];
    const ticks: string[] = [];
    const daemons: string[] = [];

    class Work {
      @on.create(API, 'widgets')
      created({ name }: ChangeContext): void {
        created.push(name);
      }
      @timer(API, 'widgets', { interval: 0.3 })
      tick({ name }: { name: string }): void {
        ticks.push(name);
      }
      @daemon(API, 'widgets')
      async watchOver({ name, stopped }: DaemonContext): Promise<void> {
        daemons.push(`${name} started`);
        await stopped;
        daemons.push(`${name} stopped`);
      }
    }

    const operator = start(namespace, 'leader', [Work]);
    await waitFor(() => operator.active, { what: 'the operator to lead' });
    await operator.ready;
    const widgets = new Widgets(kc, namespace);
    await widgets.create('w');
    await waitFor(
      () => created.includes('w') && ticks.length >= 2 && daemons.includes('w started'),
      { what: 'the handler, the timer and the daemon to run' },
    );

    // Another replica takes the Lease over: the leader's next renewal finds it held by someone else.
    const client = new ApiClient(kc);
    clients.push(client);
    const path = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${LOCK}`;
    // The leader renews meanwhile now and then (a 409 on our stale version): read again and retry, as a replica would.
    await waitFor(
      async () => {
        const lease = await client.request<Lease>('GET', path);
        const now = formatMicroTime(Date.now());
        const taken = await client
          .request<Lease>('PUT', path, {
            body: {
              ...lease,
              spec: { ...lease.spec, holderIdentity: 'usurper', acquireTime: now, renewTime: now },
            },
          })
          .then(
            () => true,
            (error: unknown) => {
              if (ApiError.isConflict(error)) return false;
              throw error;
            },
          );
        return taken;
      },
      { what: 'the usurper to take the Lease', timeoutMs: 10_000, intervalMs: 50 },
    );

    let lost = false;
    void operator.lostLeadership.then(() => (lost = true));
    await waitFor(() => lost, {
      what: 'the operator to notice the loss',
      timeoutMs: 2 * ELECTION.retryPeriod * 1000 + 5_000,
    });

    expect(operator.active).toBe(false);
    expect(daemons).toEqual(['w started', 'w stopped']);
    const ticksAtLoss = ticks.length;
    await widgets.create('after-loss');
    await sleep(1_500); // five timer intervals, and ample time to handle a new object
    expect(ticks).toHaveLength(ticksAtLoss);
    expect(created).toEqual(['w']);
  }, 60_000);

  test('a standby is ready (/readyz 200) while the other replica leads, and handles nothing', async () => {
    const { kc, namespace } = await widgetNamespace('standby');
    const handledBy: string[] = [];
    const recorder = (identity: string): HandlerClass =>
      class Recorder {
        @on.create(API, 'widgets')
        created({ name }: ChangeContext): void {
          handledBy.push(`${name} by ${identity}`);
        }
      };

    const health = { port: 0, host: '127.0.0.1' };
    const first = start(namespace, 'first', [recorder('first')], { health });
    await waitFor(() => first.active, { what: 'the first replica to lead' });
    const second = start(namespace, 'second', [recorder('second')], { health });
    const [firstPort, secondPort] = [(await first.serveHealth())!, (await second.serveHealth())!];

    await waitFor(async () => (await get(secondPort, '/readyz')).status === 200, {
      what: 'the standby to report ready',
      timeoutMs: 10_000,
    });
    expect(second.active).toBe(false);
    expect(await get(secondPort, '/readyz')).toEqual({ status: 200, body: 'ok\n' });
    await first.ready;
    expect((await get(firstPort, '/readyz')).status).toBe(200);

    await new Widgets(kc, namespace).create('w');
    await waitFor(() => handledBy.length > 0, { what: 'the leader to handle the widget' });
    await sleep(1_000);
    expect(handledBy).toEqual(['w by first']);
    expect(second.active).toBe(false);
  }, 60_000);

  test('a standby says once, at info level, who leads and on which Lease, and says from whom it takes over', async () => {
    const { namespace } = await widgetNamespace('standby-log');
    class Idle {
      @on.create(API, 'widgets')
      created(_: ChangeContext): void {}
    }

    const first = start(namespace, 'first', [Idle]);
    await waitFor(() => first.active, { what: 'the first replica to lead' });
    const logs = new LogCapture();
    const second = start(namespace, 'second', [Idle], { logger: logs.logger });
    await waitFor(() => logs.containing('standing by').length > 0, {
      what: 'the standby to say who leads',
    });
    expect(logs.containing('standing by')).toEqual([
      expect.objectContaining({
        level: 30,
        msg: `standing by, leader is first (Lease ${namespace}/${LOCK})`,
        holder: 'first',
      }),
    ]);

    operators.splice(operators.indexOf(first), 1);
    await first.stop(2_000); // releases the Lease
    await waitFor(() => second.active, { what: 'the standby to take over' });
    expect(logs.containing('took over').map((line) => line.msg)).toEqual([
      `took over the Lease ${namespace}/${LOCK} from first: leading`,
    ]);
    expect(logs.containing('standing by')).toHaveLength(1);
  }, 60_000);
});
