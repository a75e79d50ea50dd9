import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  AdmissionError,
  ApiClient,
  on,
  type AdmissionContext,
} from '../../../src/framework/index.js';
import { runOperator, waitFor, type TestOperator } from '../../../src/testing/index.js';
import {
  sharedKubeConfig,
  sharedWebhookClientCA,
  statusOf,
  uniqueNamespace,
} from '../../support/cluster.js';
import {
  installWidgetCrd,
  WIDGET_API_VERSION,
  widgetIds,
  Widgets,
  type Widget,
} from '../../support/widgets.js';
import { admissionReview, send } from '../../support/webhook-requests.js';

/**
 * Webhooks that accept the API server only: the test plane's API server presents a client certificate
 * to admission webhooks (its admission configuration), and the operator trusts that certificate's CA.
 */

class SizeAdmission {
  @on.validate(WIDGET_API_VERSION, 'widgets', { id: 'size' })
  size({ spec }: AdmissionContext<Widget>): void {
    if ((spec.size ?? 0) > 9)
      throw new AdmissionError('spec.size must be at most 9', { code: 422 });
  }
}

let kc: KubeConfig;
let api: ApiClient;
let operator: TestOperator | undefined;
const identity = `adm-auth-${randomBytes(4).toString('hex')}.konductor.dev`;

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installWidgetCrd(kc);
  api = new ApiClient(kc);
});

afterAll(async () => {
  await operator?.stop();
  // Cluster-scoped: leave no webhook behind for the files that share this control plane.
  await api
    .resource('admissionregistration.k8s.io/v1', 'validatingwebhookconfigurations')
    .delete({ name: identity });
  api.close();
});

test('with the API server’s client CA, creates through the API server reach the handler and a caller without a certificate is refused 403', async () => {
  const namespace = await uniqueNamespace(kc, 'adm-auth');
  operator = await runOperator({
    kubeConfig: kc,
    handlers: [new SizeAdmission()],
    namespaces: [namespace],
    identity,
    webhooks: { port: 0, url: 'https://127.0.0.1', clientCA: sharedWebhookClientCA() },
  });
  const widgets = new Widgets(kc, namespace);

  // The handler's own message, not "failed calling webhook": the API server's certificate was accepted.
  let refusal = '';
  await waitFor(
    async () => {
      refusal = await widgets.create(`big-${randomBytes(2).toString('hex')}`, { size: 10 }).then(
        () => '',
        (error: unknown) => `${statusOf(error)} ${String((error as { body?: unknown }).body)}`,
      );
      return refusal.includes('spec.size must be at most 9');
    },
    { what: `the API server to call the new webhook (last answer: ${refusal})` },
  );
  await expect(widgets.create('small', { size: 1 })).resolves.toMatchObject({
    metadata: { name: 'small' },
  });

  const configuration = await api
    .resource('admissionregistration.k8s.io/v1', 'validatingwebhookconfigurations')
    .get({ name: identity });
  const url = new URL(
    (configuration as { webhooks: Array<{ clientConfig: { url: string } }> }).webhooks[0]!
      .clientConfig.url,
  );
  const review = admissionReview({
    apiVersion: WIDGET_API_VERSION,
    kind: 'Widget',
    metadata: { name: 'w', namespace },
    spec: { size: 1 },
  }) as { request: Record<string, unknown> };
  // A review the handler would answer: only the missing certificate refuses it.
  Object.assign(review.request, {
    kind: { group: widgetIds.group, version: widgetIds.version, kind: 'Widget' },
    resource: { group: widgetIds.group, version: widgetIds.version, resource: widgetIds.plural },
    namespace,
  });
  const direct = await send(Number(url.port), url.pathname, review, { ca: [], insecure: true });
  expect([direct.status, direct.body.trim()]).toEqual([
    403,
    'admission reviews are accepted only from a caller with a client certificate signed by the webhook client CA',
  ]);
});
