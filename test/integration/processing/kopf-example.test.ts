import { fileURLToPath } from 'node:url';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import {
  createOperator,
  on,
  silentLogger,
  type EventContext,
  type Operator,
} from '../../../src/framework/index.js';
import { installCrds, readCrds } from '../../../src/testing/index.js';
import { KopfExample } from '../../fixtures/kopf-example/kopf-example.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { waitFor } from '../../support/wait-for.js';

// Acceptance fixture (a): the CNCF Operator White Paper's Kopf example, run as written on a real
// control plane: the create handler writes status.name, the event handler keeps it in the memo, and
// the 5-second timer, whose `when` reads the memo, greets only once the memo has `last_name`.
const crdFile = fileURLToPath(new URL('../../fixtures/kopf-example/crd.yaml', import.meta.url));
const ids = { group: 'kopf.dev', version: 'v1', plural: 'kopfexamples' };

interface KopfExampleObject {
  metadata?: { name?: string };
  status?: { name?: string };
}

/** What a test-side `@on.event` handler, registered after the example, sees of the shared memo at each event. */
class MemoWatcher {
  readonly seen: string[] = [];
  constructor(private readonly trace: string[]) {}

  @on.event('kopf.dev/v1', 'kopfexamples')
  look({ memo, name, status }: EventContext): void {
    const line = `${name}: status.name=${String((status as { name?: string } | undefined)?.name)} memo.last_name=${String(memo.last_name)}`;
    this.seen.push(line);
    this.trace.push(line);
  }
}

describe('the CNCF Operator White Paper Kopf example', () => {
  let operator: Operator | undefined;
  afterEach(async () => {
    await operator?.stop(1_000);
    operator = undefined;
  });

  async function run(
    kc: KubeConfig,
    namespace: string,
  ): Promise<{ trace: string[]; watcher: MemoWatcher; examples: CustomObjectsApi }> {
    const trace: string[] = [];
    const watcher = new MemoWatcher(trace);
    const example = new KopfExample((line) => trace.push(line));
    operator = createOperator({
      kubeConfig: kc,
      handlers: [example, watcher],
      namespaces: [namespace],
      logger: silentLogger(),
    }).start();
    await operator.ready;
    return { trace, watcher, examples: kc.makeApiClient(CustomObjectsApi) };
  }

  async function create(
    examples: CustomObjectsApi,
    namespace: string,
    name: string,
    spec: Record<string, unknown>,
  ): Promise<void> {
    await examples.createNamespacedCustomObject({
      ...ids,
      namespace,
      body: { apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { name }, spec },
    });
  }

  async function statusName(
    examples: CustomObjectsApi,
    namespace: string,
    name: string,
  ): Promise<string | undefined> {
    const object = (await examples.getNamespacedCustomObject({
      ...ids,
      namespace,
      name,
    })) as KopfExampleObject;
    return object.status?.name;
  }

  test('the create handler writes status.name from spec.name, "world" when it has none', async () => {
    const kc = sharedKubeConfig();
    await installCrds(kc, readCrds(crdFile));
    const namespace = await uniqueNamespace(kc, 'kopf-ex-create');
    const { examples } = await run(kc, namespace);

    await create(examples, namespace, 'alice', { name: 'Alice' });
    await create(examples, namespace, 'anonymous', {});

    expect(
      await waitFor(() => statusName(examples, namespace, 'alice'), {
        what: 'alice to get status.name',
      }),
    ).toBe('Alice');
    expect(
      await waitFor(() => statusName(examples, namespace, 'anonymous'), {
        what: 'anonymous to get status.name',
      }),
    ).toBe('world');
  });

  test('the event handler fills the memo from status.name, which every handler of the object then sees', async () => {
    const kc = sharedKubeConfig();
    await installCrds(kc, readCrds(crdFile));
    const namespace = await uniqueNamespace(kc, 'kopf-ex-memo');
    const { examples, watcher } = await run(kc, namespace);

    await create(examples, namespace, 'alice', { name: 'Alice' });

    await waitFor(() => watcher.seen.some((line) => line.endsWith('memo.last_name=Alice')), {
      what: 'the memo to hold last_name',
    });
    // Before status.name existed the event handler did not run (field/value PRESENT), so the memo was empty.
    expect(watcher.seen[0]).toBe('alice: status.name=undefined memo.last_name=undefined');
    expect(watcher.seen.filter((line) => line.includes('status.name=Alice'))).toEqual(
      watcher.seen.filter((line) => line.endsWith('memo.last_name=Alice')),
    );
  });

  test('the timer greets only once the memo has last_name, and again at its interval', async () => {
    const kc = sharedKubeConfig();
    await installCrds(kc, readCrds(crdFile));
    const namespace = await uniqueNamespace(kc, 'kopf-ex-timer');
    const { examples, trace } = await run(kc, namespace);

    await create(examples, namespace, 'alice', { name: 'Alice' });

    await waitFor(() => trace.filter((line) => line === 'Hello, Alice!').length >= 2, {
      what: 'two greetings',
      timeoutMs: 30_000,
    });
    const firstGreeting = trace.indexOf('Hello, Alice!');
    const memoFilled = trace.findIndex((line) => line.endsWith('memo.last_name=Alice'));
    expect(memoFilled).toBeGreaterThanOrEqual(0);
    expect(firstGreeting).toBeGreaterThan(memoFilled);
    // Events seen while the memo had no last_name passed without a greeting.
    expect(trace.slice(0, memoFilled).filter((line) => line.startsWith('Hello'))).toEqual([]);
    expect(trace.filter((line) => line.startsWith('Hello'))).not.toContain('Hello, undefined!');
  });
});
