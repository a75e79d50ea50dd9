import { randomBytes } from 'node:crypto';
import { CoreV1Api } from '@kubernetes/client-node';
import {
  createOperator,
  on,
  silentLogger,
  type ChangeContext,
  type Operator,
} from '../../../src/framework/index.js';
import { sharedKubeConfig } from '../../support/cluster.js';
import { installWidgetCrd, Widgets } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';

describe('namespace globs', () => {
  let operator: Operator | undefined;
  afterEach(async () => {
    await operator?.stop(2_000);
    operator = undefined;
  });

  test('serve matching namespaces created after the start, and nothing elsewhere', async () => {
    const kc = sharedKubeConfig();
    await installWidgetCrd(kc);
    const core = kc.makeApiClient(CoreV1Api);
    const run = randomBytes(3).toString('hex');
    const created = async (name: string): Promise<string> => {
      await core.createNamespace({ body: { metadata: { name } } });
      return name;
    };
    const early = await created(`glob-${run}-early`);
    const handled: string[] = [];
    class Seen {
      @on.create('test.konductor.dev/v1', 'widgets')
      created({ namespace, name }: ChangeContext): void {
        handled.push(`${namespace}/${name}`);
      }
    }
    operator = createOperator({
      kubeConfig: kc,
      handlers: [Seen],
      namespaces: [`glob-${run}-*`],
      logger: silentLogger(),
    }).start();
    await operator.ready;

    const late = await created(`glob-${run}-late`);
    const other = await created(`other-${run}`);
    await new Widgets(kc, early).create('a');
    await new Widgets(kc, late).create('b');
    await new Widgets(kc, other).create('c');

    await waitFor(() => handled.length >= 2, {
      what: 'the widgets in both matching namespaces to be handled',
    });
    // The unmatched widget was created before the matching ones' handling finished; give it a moment more.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(handled.sort()).toEqual([`${early}/a`, `${late}/b`]);
  }, 60_000);
});
