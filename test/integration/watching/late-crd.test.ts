import { randomBytes } from 'node:crypto';
import { CustomObjectsApi } from '@kubernetes/client-node';
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import {
  createOperator,
  on,
  silentLogger,
  type EventContext,
} from '../../../src/framework/index.js';
import { installCrds } from '../../../src/testing/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { waitFor } from '../../support/wait-for.js';

function gadgetCrd(group: string): V1CustomResourceDefinition {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `gadgets.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true },
          },
        },
      ],
    },
  };
}

describe('a resource whose CRD appears after the operator starts', () => {
  test('is picked up once the CRD is installed, without restarting the operator', async () => {
    const kc = sharedKubeConfig();
    const namespace = await uniqueNamespace(kc, 'late');
    const group = `late-${randomBytes(3).toString('hex')}.konductor.dev`;
    const seen: string[] = [];

    class Gadgets {
      @on.event(`${group}/v1`, 'Gadget')
      observe({ type, name }: EventContext): void {
        seen.push(`${type} ${name}`);
      }
    }

    const operator = createOperator({
      kubeConfig: kc,
      handlers: [Gadgets],
      namespaces: [namespace],
      logger: silentLogger(),
    }).start();
    try {
      await new Promise((resolve) => setTimeout(resolve, 1_500)); // the operator is running, the CRD is not there
      await installCrds(kc, [gadgetCrd(group)]);
      await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
        group,
        version: 'v1',
        plural: 'gadgets',
        namespace,
        body: { apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name: 'first' } },
      });
      await waitFor(() => seen.includes('ADDED first'), {
        what: 'the handler to see the new gadget',
        timeoutMs: 30_000,
      });
    } finally {
      await operator.stop();
    }
  });
});
