import {
  createOperator,
  on,
  silentLogger,
  type ChangeContext,
  type Operator,
} from '../../../src/framework/index.js';
import type { HandlerClass } from '../../../src/framework/registry/registry.js';
import { sharedKubeConfig } from '../../support/cluster.js';
import { waitFor } from '../../support/wait-for.js';
import { WIDGET_API_VERSION } from '../../support/widgets.js';
import { widgetNamespace } from '../../support/widget-namespace.js';

const API = WIDGET_API_VERSION;
// Short Lease timings keep the specs quick; renewals come every retry period.
const ELECTION = { leaseDuration: 3, renewDeadline: 2, retryPeriod: 0.5 };

/** Whether a request listed (not watched) widgets. */
function listsWidgets(request: string): boolean {
  return request.startsWith('GET ') && request.includes('/widgets') && !request.includes('watch=');
}

describe('a warm standby', () => {
  const operators: Operator[] = [];
  afterEach(async () => {
    await Promise.all(operators.splice(0).map((operator) => operator.stop(2_000)));
  });

  function start(
    namespace: string,
    replica: string,
    handlers: HandlerClass[],
    warmStandby: boolean,
    requests: string[] = [],
  ): Operator {
    const operator = createOperator({
      kubeConfig: sharedKubeConfig(),
      handlers,
      namespaces: [namespace],
      logger: silentLogger(),
      leaderElection: { ...ELECTION, namespace, identity: replica, warmStandby },
      onRequest: (method, path) => requests.push(`${method} ${path}`),
    }).start();
    operators.push(operator);
    return operator;
  }

  /** Handlers recording each update under the replica that ran it. */
  function recording(replica: string, updated: string[]): HandlerClass {
    class Updates {
      @on.update(API, 'widgets')
      changed({ name }: ChangeContext): void {
        updated.push(`${replica}/${name}`);
      }
    }
    return Updates;
  }

  async function takeOver(warm: boolean): Promise<{ requests: string[]; updated: string[] }> {
    const { namespace, widgets } = await widgetNamespace(warm ? 'warm' : 'cold');
    const updated: string[] = [];
    const leader = start(namespace, 'leader', [recording('leader', updated)], false);
    await waitFor(() => leader.active, { what: 'the first replica to lead' });
    await widgets.createMany('w', 20);
    const requests: string[] = [];
    const standby = start(namespace, 'standby', [recording('standby', updated)], warm, requests);
    // Warm: the standby lists while it waits; cold: it does not.
    if (warm) await waitFor(() => requests.some(listsWidgets), { what: 'the warm listing' });

    // Cold, the standby has sent no listing yet; warm, its listing is done: what follows is the takeover's.
    const sinceTakeover = requests.length;
    await operators.shift()!.stop(2_000);
    await waitFor(() => standby.active, { what: 'the standby to take over' });
    await standby.ready;
    await widgets.patchSpec('w-3', { size: 99 });
    await waitFor(() => updated.includes('standby/w-3'), { what: 'the change to be handled' });
    return { requests: requests.slice(sinceTakeover), updated };
  }

  test('takes over without listing the objects again', async () => {
    const { requests } = await takeOver(true);
    expect(requests.filter(listsWidgets)).toEqual([]);
  });

  test('(without it, a standby lists every object on taking over)', async () => {
    const { requests } = await takeOver(false);
    expect(requests.filter(listsWidgets).length).toBeGreaterThan(0);
  });
});
