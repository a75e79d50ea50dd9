import { randomBytes } from 'node:crypto';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import {
  AdmissionError,
  ApiClient,
  on,
  type AdmissionContext,
} from '../../../src/framework/index.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { runOperator } from '../../../src/testing/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { installWidgetCrd, WIDGET_API_VERSION } from '../../support/widgets.js';

/**
 * An operator whose own namespace (POD_NAMESPACE) is being deleted goes for good: no instance comes
 * back to answer its webhooks, so it removes its admission configurations as it stops. Any other
 * stop (a rollout, a rescheduled pod) keeps them for the next instance.
 */
class SizeCheck {
  @on.validate(WIDGET_API_VERSION, 'widgets', { id: 'size' })
  size({ spec }: AdmissionContext<{ size?: number }>): void {
    if ((spec.size ?? 0) > 9) throw new AdmissionError('spec.size must be at most 9');
  }
}

let kc: KubeConfig;
let api: ApiClient;
let core: CoreV1Api;
const identities: string[] = [];
const savedPodNamespace = process.env.POD_NAMESPACE;

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installWidgetCrd(kc);
  api = new ApiClient(kc);
  core = kc.makeApiClient(CoreV1Api);
});

afterEach(() => {
  if (savedPodNamespace === undefined) delete process.env.POD_NAMESPACE;
  else process.env.POD_NAMESPACE = savedPodNamespace;
});

afterAll(async () => {
  for (const name of identities) await configurations().delete({ name });
  api?.close();
});

function configurations() {
  return api.resource<KubeObject>(
    'admissionregistration.k8s.io/v1',
    'validatingwebhookconfigurations',
  );
}

/** An operator running in `namespace` (as its pod would: POD_NAMESPACE) that serves the SizeCheck webhook there. */
async function operatorIn(
  namespace: string,
): Promise<{ identity: string; stop: () => Promise<void> }> {
  const identity = `home-${randomBytes(4).toString('hex')}.konductor.dev`;
  identities.push(identity);
  process.env.POD_NAMESPACE = namespace;
  const operator = await runOperator({
    kubeConfig: kc,
    handlers: [SizeCheck],
    namespaces: [namespace],
    identity,
    webhooks: { port: 0, url: 'https://127.0.0.1' },
  });
  expect(await configurations().find({ name: identity })).toBeDefined();
  return { identity, stop: () => operator.stop() };
}

describe("an operator's webhook configurations when it stops", () => {
  test('its own namespace being deleted: it removes them', async () => {
    const namespace = await uniqueNamespace(kc, 'home-deleted');
    const { identity, stop } = await operatorIn(namespace);
    await core.deleteNamespace({ name: namespace });
    try {
      await stop();
      expect(await configurations().find({ name: identity })).toBeUndefined();
    } finally {
      // No namespace controller on the shared plane: finish the deletion as it would (the Secret goes with it).
      await core.deleteCollectionNamespacedSecret({ namespace }).catch(() => undefined);
      await core
        .replaceNamespaceFinalize({
          name: namespace,
          body: { metadata: { name: namespace }, spec: { finalizers: [] } },
        })
        .catch(() => undefined);
    }
  });

  test('a healthy own namespace (a rollout, a rescheduled pod): it keeps them for the next instance', async () => {
    const namespace = await uniqueNamespace(kc, 'home-kept');
    const { identity, stop } = await operatorIn(namespace);
    await stop();
    expect(await configurations().find({ name: identity })).toBeDefined();
  });
});
