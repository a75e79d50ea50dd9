import { load, loadAll } from 'js-yaml';
import { dnsLabelFor, packageNameFor, projectSettings } from '../../../src/cli/commands/init.js';
import { projectFiles } from '../../../src/cli/templates/index.js';

const settings = projectSettings(
  { dir: '/tmp/My Operator', group: 'greet.acme.io' },
  '1.2.3',
  '^4.20.0',
);
const files = projectFiles(settings);

function file(path: string): string {
  const contents = files.get(path);
  if (contents === undefined) throw new Error(`no ${path} in the project`);
  return contents;
}

interface Manifest {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
  spec?: unknown;
}

describe('konductor init: project settings', () => {
  test('the package name comes from the folder name; Kubernetes names from the package name', () => {
    expect(settings).toEqual({
      packageName: 'my-operator',
      appName: 'my-operator',
      group: 'greet.acme.io',
      konductor: '^1.2.3',
      tsx: '^4.20.0',
    });
    expect(packageNameFor('__Greeter_2__')).toBe('greeter_2__');
    expect(dnsLabelFor('@acme/db.operator_x')).toBe('db-operator-x');
    expect(() => packageNameFor('???')).toThrow(
      "cannot make a package name from the folder name '???': give one with --name",
    );
  });

  test('--name and --konductor win', () => {
    expect(
      projectSettings(
        { dir: 'x', name: '@acme/op', group: 'example.com', konductor: 'file:../k.tgz' },
        '1.2.3',
        undefined,
      ),
    ).toMatchObject({
      packageName: '@acme/op',
      appName: 'op',
      konductor: 'file:../k.tgz',
      tsx: '^4.20.0',
    });
  });
});

describe('konductor init: the files', () => {
  test('a project with handlers, CRD, test, Dockerfile and deploy/', () => {
    expect([...files.keys()].sort()).toEqual([
      '.dockerignore',
      '.gitignore',
      'Dockerfile',
      'README.md',
      'crds/greetings.yaml',
      'deploy/00-namespace.yaml',
      'deploy/10-serviceaccount.yaml',
      'deploy/20-rbac.yaml',
      'deploy/30-deployment.yaml',
      'package.json',
      'src/handlers.ts',
      'test/handlers.test.ts',
      'tsconfig.json',
    ]);
  });

  test('package.json: an ES module package depending on konductor, with start, dev, test (provisioning first) and typecheck scripts', () => {
    expect(JSON.parse(file('package.json'))).toEqual({
      name: 'my-operator',
      version: '0.1.0',
      private: true,
      type: 'module',
      engines: { node: '>=20.19' },
      scripts: {
        pretest: 'bash node_modules/konductor/scripts/provision.sh',
        start: 'konductor run src/handlers.ts',
        dev: 'konductor dev src/handlers.ts',
        test: 'node --import tsx --test test/*.test.ts',
        typecheck: 'tsc --noEmit',
      },
      dependencies: { konductor: '^1.2.3' },
      devDependencies: { '@types/node': '^20.19.0', tsx: '^4.20.0', typescript: '~5.9.3' },
    });
  });

  test('tsconfig.json: strict, NodeNext, ES2022, standard decorators', () => {
    const { compilerOptions } = JSON.parse(file('tsconfig.json')) as {
      compilerOptions: Record<string, unknown>;
    };
    expect(compilerOptions).toMatchObject({
      strict: true,
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      target: 'ES2022',
    });
    expect(compilerOptions).not.toHaveProperty('experimentalDecorators');
    expect(compilerOptions).not.toHaveProperty('skipLibCheck');
  });

  test("the handlers lead with a reconcile that owns a ConfigMap, then a create handler and a timer, all on the CRD's kind", () => {
    const handlers = file('src/handlers.ts');
    for (const decorator of [
      '@on.reconcile(Greeting, { owns: [kinds.ConfigMap] })',
      '@on.create(Greeting)',
      '@timer(Greeting, { interval: 30 })',
    ]) {
      expect(handlers).toContain(decorator);
    }
    expect(handlers.indexOf('@on.reconcile(')).toBeLessThan(handlers.indexOf('@on.create('));
    expect(handlers).not.toContain('@on.delete(');
    expect(handlers).toContain(
      "export const Greeting = defineKind<Greeting>('greet.acme.io/v1', 'Greeting', 'greetings');",
    );
    const crd = load(file('crds/greetings.yaml')) as {
      metadata: { name: string };
      spec: {
        group: string;
        names: { plural: string };
        versions: Array<{ name: string; subresources: unknown }>;
      };
    };
    expect(crd.metadata.name).toBe('greetings.greet.acme.io');
    expect(crd.spec.group).toBe('greet.acme.io');
    expect(crd.spec.versions[0]).toMatchObject({ name: 'v1', subresources: { status: {} } });
  });

  test('the test runs the operator on a real control plane, in a namespace it creates', () => {
    const test = file('test/handlers.test.ts');
    for (const text of [
      'TestControlPlane.start()',
      'installCrds(',
      "kind: 'Namespace'",
      'runOperator(',
      'waitFor(',
      'operator?.stop()',
      'plane?.stop()',
    ]) {
      expect(test).toContain(text);
    }
  });

  test('deploy/: a ServiceAccount, least-privilege RBAC for the example resource, and a hardened Deployment', () => {
    const manifests = [
      'deploy/00-namespace.yaml',
      'deploy/10-serviceaccount.yaml',
      'deploy/20-rbac.yaml',
      'deploy/30-deployment.yaml',
    ].flatMap((path) => loadAll(file(path)) as Manifest[]);
    expect(manifests.map((m) => `${m.kind}/${m.metadata.name}`)).toEqual([
      'Namespace/my-operator-system',
      'ServiceAccount/my-operator',
      'ClusterRole/my-operator',
      'ClusterRoleBinding/my-operator',
      'Role/my-operator-leader-election',
      'RoleBinding/my-operator-leader-election',
      'Deployment/my-operator',
    ]);
    const clusterRole = manifests.find((m) => m.kind === 'ClusterRole')!;
    expect(clusterRole.rules).toEqual([
      {
        apiGroups: ['greet.acme.io'],
        resources: ['greetings'],
        verbs: ['get', 'list', 'watch', 'patch'],
      },
      { apiGroups: ['greet.acme.io'], resources: ['greetings/status'], verbs: ['get', 'patch'] },
      {
        apiGroups: [''],
        resources: ['configmaps'],
        verbs: ['get', 'list', 'watch', 'create', 'patch'],
      },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    ]);
    const deployment = manifests.find((m) => m.kind === 'Deployment')!;
    expect(deployment.spec).toMatchObject({
      template: {
        spec: {
          serviceAccountName: 'my-operator',
          securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              image: 'my-operator:0.1.0',
              args: ['run', 'src/handlers.ts', '--all-namespaces', '--log-format', 'json'],
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ['ALL'] },
              },
            },
          ],
        },
      },
    });
  });
});
