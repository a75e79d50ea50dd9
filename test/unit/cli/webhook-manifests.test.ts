import { manifestDocuments } from '../../../src/cli/commands/manifest-objects.js';
import type { RbacRules } from '../../../src/cli/commands/rbac-rules.js';

const rbac: RbacRules = {
  resources: [],
  rules: [{ apiGroups: [''], resources: ['events'], verbs: ['create'] }],
  leaseRules: [],
};
const install = {
  name: 'widgets-operator',
  namespace: 'ops',
  createNamespace: false,
  image: 'img:1',
  runPaths: ['dist/handlers.js'],
  watchNamespaces: undefined,
  leaseName: 'widgets-operator',
};

function kinds(documents: ReturnType<typeof manifestDocuments>): string[] {
  return documents.map(
    (d) => `${String(d.object.kind)}/${String((d.object.metadata as { name: string }).name)}`,
  );
}

describe('konductor manifests for handlers with webhooks', () => {
  test('without webhooks nothing about them is printed', () => {
    expect(kinds(manifestDocuments(rbac, install)).some((k) => k.includes('webhooks'))).toBe(false);
  });

  test('admission handlers add the Service, the rights to register them and to keep their certificate', () => {
    const documents = manifestDocuments(rbac, {
      ...install,
      webhooks: { identity: 'widgets.example.com', admission: true, conversions: [] },
    });
    expect(kinds(documents)).toEqual(
      expect.arrayContaining([
        'Service/widgets-operator-webhooks',
        'ClusterRole/widgets-operator-webhooks',
        'ClusterRoleBinding/widgets-operator-webhooks',
        'Role/widgets-operator-webhooks',
        'RoleBinding/widgets-operator-webhooks',
      ]),
    );
    const clusterRole = documents.find(
      (d) =>
        d.object.kind === 'ClusterRole' &&
        (d.object.metadata as { name: string }).name === 'widgets-operator-webhooks',
    )!;
    expect(clusterRole.object.rules).toContainEqual({
      apiGroups: ['admissionregistration.k8s.io'],
      resources: ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations'],
      resourceNames: ['widgets.example.com'],
      verbs: ['get', 'patch', 'delete'],
    });
    const role = documents.find(
      (d) =>
        d.object.kind === 'Role' &&
        (d.object.metadata as { name: string }).name === 'widgets-operator-webhooks',
    )!;
    expect(role.object.rules).toContainEqual({
      apiGroups: [''],
      resources: ['secrets'],
      resourceNames: ['widgets.example.com-webhook-tls'],
      verbs: ['get', 'patch', 'delete'],
    });
  });

  test('the Deployment serves them on 9443 and names the Service', () => {
    const documents = manifestDocuments(rbac, {
      ...install,
      webhooks: { identity: 'konductor.dev', admission: true, conversions: [] },
    });
    const container = (
      documents.find((d) => d.object.kind === 'Deployment')!.object as {
        spec: { template: { spec: { containers: Array<{ args: string[]; ports: unknown[] }> } } };
      }
    ).spec.template.spec.containers[0]!;
    expect(container.ports).toContainEqual({ name: 'webhooks', containerPort: 9443 });
    expect(container.args.join(' ')).toContain('--webhook-service ops/widgets-operator-webhooks');
  });

  test('conversions may patch only the CRDs they convert', () => {
    const documents = manifestDocuments(rbac, {
      ...install,
      webhooks: {
        identity: 'konductor.dev',
        admission: false,
        conversions: ['gadgets.example.com'],
      },
    });
    const clusterRole = documents.find(
      (d) =>
        d.object.kind === 'ClusterRole' &&
        (d.object.metadata as { name: string }).name === 'widgets-operator-webhooks',
    )!;
    expect(clusterRole.object.rules).toEqual([
      {
        apiGroups: ['apiextensions.k8s.io'],
        resources: ['customresourcedefinitions'],
        resourceNames: ['gadgets.example.com'],
        verbs: ['get', 'patch'],
      },
    ]);
  });
});
