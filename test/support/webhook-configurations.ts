import type { KubeObject } from '../../src/framework/objects/kube-object.js';

/** A configuration as the operator labels its own, whose one webhook matches no object (so it disturbs no other spec). */
export function unreachableConfiguration(identity: string): KubeObject {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: identity, labels: { 'app.kubernetes.io/managed-by': identity } },
    webhooks: [
      {
        name: `nothing.${identity}`,
        clientConfig: { url: 'https://127.0.0.1:1/validate/nothing' },
        rules: [
          {
            apiGroups: [''],
            apiVersions: ['v1'],
            operations: ['CREATE'],
            resources: ['configmaps'],
            scope: 'Namespaced',
          },
        ],
        objectSelector: { matchLabels: { 'konductor-test/never': 'set' } },
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        failurePolicy: 'Ignore',
      },
    ],
  } as KubeObject;
}
