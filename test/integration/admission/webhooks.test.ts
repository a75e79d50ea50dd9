import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  AdmissionError,
  ApiClient,
  on,
  type AdmissionContext,
  type MutationContext,
} from '../../../src/framework/index.js';
import { runOperator, waitFor, type TestOperator } from '../../../src/testing/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { kubectlApply } from '../../support/kubectl.js';
import {
  installWidgetCrd,
  readWidget,
  WIDGET_API_VERSION,
  type Widget,
} from '../../support/widgets.js';

/**
 * Admission webhooks as a user meets them: `kubectl apply` goes to the real API server, which calls
 * the operator's webhook server over HTTPS with the CA the operator generated and published.
 */

interface Seen {
  operation: string;
  dryRun: boolean;
  username: string;
}

class WidgetAdmission {
  readonly seen: Seen[] = [];

  @on.validate(WIDGET_API_VERSION, 'widgets', { id: 'size' })
  size({ spec, operation, dryRun, userInfo }: AdmissionContext<Widget>): string[] {
    this.seen.push({ operation, dryRun, username: userInfo.username });
    if ((spec.size ?? 0) > 9)
      throw new AdmissionError('spec.size must be at most 9', { code: 422 });
    return (spec.size ?? 0) > 5 ? ['spec.size above 5 is slow'] : [];
  }

  @on.mutate(WIDGET_API_VERSION, 'widgets', { id: 'color' })
  color({ spec, patch }: MutationContext<Widget>): void {
    if (!spec.color) patch.spec.color = 'blue';
  }
}

class LenientAdmission {
  @on.validate(WIDGET_API_VERSION, 'widgets', { id: 'lenient', failurePolicy: 'Ignore' })
  lenient({ spec }: AdmissionContext<Widget>): void {
    if ((spec.size ?? 0) > 9) throw new AdmissionError('spec.size must be at most 9');
  }
}

let kc: KubeConfig;
let api: ApiClient;
const running: TestOperator[] = [];
const identities: string[] = [];

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installWidgetCrd(kc);
  api = new ApiClient(kc);
});

afterAll(async () => {
  await Promise.all(running.map((operator) => operator.stop()));
  // Cluster-scoped: leave no webhook behind for the files that share this control plane.
  for (const name of identities) {
    for (const plural of ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations']) {
      await api.resource('admissionregistration.k8s.io/v1', plural).delete({ name });
    }
  }
  api?.close();
});

/** An operator serving `handlers`' webhooks for one namespace, reached by the API server at 127.0.0.1. */
async function startWebhooks(namespace: string, handlers: object[]): Promise<TestOperator> {
  const identity = `adm-${randomBytes(4).toString('hex')}.konductor.dev`;
  identities.push(identity);
  const operator = await runOperator({
    kubeConfig: kc,
    handlers,
    namespaces: [namespace],
    identity,
    webhooks: { port: 0, url: 'https://127.0.0.1' },
  });
  running.push(operator);
  return operator;
}

function widget(namespace: string, name: string, spec: Widget['spec']): Widget {
  return { apiVersion: WIDGET_API_VERSION, kind: 'Widget', metadata: { namespace, name }, spec };
}

/** The API server picks up a new configuration shortly after it is written: wait until a refused object is refused. */
async function refusing(namespace: string): Promise<void> {
  await waitFor(
    async () =>
      (await kubectlApply(widget(namespace, 'probe', { size: 10 }), ['--dry-run=server'])).code !==
      0,
    {
      what: 'the API server to call the new webhook',
    },
  );
}

describe('admission webhooks through the real API server', () => {
  test('an operator with webhooks but no way for the API server to reach them refuses to start, saying what to set', async () => {
    const namespace = await uniqueNamespace(kc, 'adm-unreachable');
    await expect(
      runOperator({ kubeConfig: kc, handlers: [new WidgetAdmission()], namespaces: [namespace] }),
    ).rejects.toThrow(/--webhook-service .* --webhook-url/);
  });

  test('kubectl apply of a refused object fails with the handler message', async () => {
    const namespace = await uniqueNamespace(kc, 'adm-refuse');
    await startWebhooks(namespace, [new WidgetAdmission()]);
    await refusing(namespace);

    const run = await kubectlApply(widget(namespace, 'big', { size: 10 }));

    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('spec.size must be at most 9');
    expect(await readWidget(namespace, 'big')).toBeUndefined();
  });

  test('a mutated object is stored with the mutation, and warnings reach kubectl', async () => {
    const namespace = await uniqueNamespace(kc, 'adm-mutate');
    await startWebhooks(namespace, [new WidgetAdmission()]);
    await refusing(namespace);

    const run = await kubectlApply(widget(namespace, 'plain', { size: 6 }));

    expect(run.code).toBe(0);
    expect(run.stderr).toContain('spec.size above 5 is slow');
    expect((await readWidget(namespace, 'plain'))?.spec?.color).toBe('blue');
  });

  test('--dry-run=server reaches the handler with dryRun true and stores nothing', async () => {
    const namespace = await uniqueNamespace(kc, 'adm-dry');
    const handlers = new WidgetAdmission();
    await startWebhooks(namespace, [handlers]);
    await refusing(namespace);
    handlers.seen.length = 0;

    const run = await kubectlApply(widget(namespace, 'trial', { size: 1 }), ['--dry-run=server']);

    expect(run.code).toBe(0);
    expect(handlers.seen).toEqual([
      { operation: 'CREATE', dryRun: true, username: expect.any(String) },
    ]);
    expect(await readWidget(namespace, 'trial')).toBeUndefined();
  });

  test('with the operator stopped, failurePolicy Fail refuses and Ignore admits', async () => {
    const strict = await uniqueNamespace(kc, 'adm-fail');
    const lenient = await uniqueNamespace(kc, 'adm-ignore');
    const strictOperator = await startWebhooks(strict, [new WidgetAdmission()]);
    const lenientOperator = await startWebhooks(lenient, [new LenientAdmission()]);
    await refusing(strict);
    await refusing(lenient);

    await strictOperator.stop();
    await lenientOperator.stop();

    const refused = await kubectlApply(widget(strict, 'small', { size: 1 }));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/failed calling webhook/);
    const admitted = await kubectlApply(widget(lenient, 'small', { size: 1 }));
    expect(admitted.code).toBe(0);
    expect(await readWidget(lenient, 'small')).toBeDefined();
  });
});
