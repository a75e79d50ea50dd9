import { jest } from '@jest/globals';
import { fileURLToPath } from 'node:url';
import { loadAll } from 'js-yaml';
import { helpFor } from '../../../src/cli/command-line.js';
import { manifestsCommand } from '../../../src/cli/commands/manifests.js';
import { UsageError } from '../../../src/cli/validators.js';

const fixture = fileURLToPath(
  new URL('../../fixtures/manifests/widget-operator.ts', import.meta.url),
);
const crd = fileURLToPath(new URL('../../fixtures/widgets-crd.yaml', import.meta.url));

interface Doc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
  roleRef?: { kind: string; name: string };
  subjects?: Array<{ kind: string; name: string; namespace: string }>;
  spec?: {
    replicas?: number;
    template: {
      spec: { serviceAccountName: string; containers: Array<{ image: string; args: string[] }> };
    };
  };
}

/** Runs the command and returns what it printed on stdout and stderr. */
async function manifests(args: string[]): Promise<{ stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const out = jest
    .spyOn(process.stdout, 'write')
    .mockImplementation((chunk: string | Uint8Array) => ((stdout += String(chunk)), true));
  const err = jest
    .spyOn(process.stderr, 'write')
    .mockImplementation((chunk: string | Uint8Array) => ((stderr += String(chunk)), true));
  try {
    await manifestsCommand(args);
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  return { stdout, stderr };
}

async function documents(args: string[]): Promise<Doc[]> {
  return loadAll((await manifests(args)).stdout) as Doc[];
}

function find(docs: readonly Doc[], kind: string, name?: string): Doc {
  const doc = docs.find((d) => d.kind === kind && (name === undefined || d.metadata.name === name));
  if (!doc) throw new Error(`no ${kind}${name ? ` ${name}` : ''} printed`);
  return doc;
}

async function usageError(args: string[]): Promise<UsageError> {
  const error: unknown = await manifests(args).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (error instanceof UsageError) return error;
  throw new Error(`expected a UsageError for ${JSON.stringify(args)}, got ${String(error)}`);
}

describe('konductor manifests', () => {
  test('prints a ServiceAccount, a ClusterRole bound to it, the leader-election Role and a Deployment running the files', async () => {
    const docs = await documents([
      fixture,
      '--name',
      'demo',
      '--crd',
      crd,
      '--image',
      'registry.example/demo:1.0',
    ]);
    expect(docs.map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([
      'ServiceAccount/demo',
      'ClusterRole/demo',
      'ClusterRoleBinding/demo',
      'Role/demo-leader-election',
      'RoleBinding/demo-leader-election',
      'Deployment/demo',
    ]);
    expect(find(docs, 'ClusterRole').rules).toEqual([
      {
        apiGroups: ['test.konductor.dev'],
        resources: ['widgets'],
        verbs: ['get', 'list', 'watch', 'patch'],
      },
      { apiGroups: ['test.konductor.dev'], resources: ['widgets/status'], verbs: ['patch'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
      // On stop: is a namespace being deleted (then finalizers no instance will come back for are released)?
      { apiGroups: [''], resources: ['namespaces'], verbs: ['get'] },
    ]);
    expect(find(docs, 'ClusterRoleBinding').subjects).toEqual([
      { kind: 'ServiceAccount', name: 'demo', namespace: 'demo' },
    ]);
    const pod = find(docs, 'Deployment').spec!.template.spec;
    expect(pod.serviceAccountName).toBe('demo');
    expect(pod.containers[0]!.image).toBe('registry.example/demo:1.0');
    expect(pod.containers[0]!.args).toEqual([
      'run',
      fixture,
      '--all-namespaces',
      '--lease-name',
      'demo',
      '--log-format',
      'json',
      '--handler-timeout',
      '600',
      '--stall-timeout',
      '900',
    ]);
  });

  test('--sharding runs 3 replicas with --sharding, and lets them read, write and remove every Lease of the operator’s namespace', async () => {
    const docs = await documents([fixture, '--name', 'demo', '--crd', crd, '--sharding']);
    const deployment = find(docs, 'Deployment').spec!;
    expect(deployment.replicas).toBe(3);
    expect(deployment.template.spec.containers[0]!.args).toContain('--sharding');
    expect(find(docs, 'Role', 'demo-leader-election').rules).toEqual([
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'],
      },
    ]);
  });

  test('--namespace-scoped grants Roles in each watched namespace and runs with --namespace for each', async () => {
    const docs = await documents([
      fixture,
      '--name',
      'demo',
      '--namespace',
      'ops',
      '--namespace-scoped',
      '--watch-namespace',
      'team-a',
      '--watch-namespace',
      'team-b',
      '--run-path',
      'dist/handlers',
    ]);
    expect(docs.some((d) => d.kind.startsWith('Cluster'))).toBe(false);
    expect(
      docs
        .filter((d) => d.kind === 'Role' && d.metadata.name === 'demo')
        .map((d) => d.metadata.namespace),
    ).toEqual(['team-a', 'team-b']);
    expect(
      docs
        .filter((d) => d.kind === 'RoleBinding' && d.metadata.name === 'demo')
        .map((d) => d.subjects),
    ).toEqual([
      [{ kind: 'ServiceAccount', name: 'demo', namespace: 'ops' }],
      [{ kind: 'ServiceAccount', name: 'demo', namespace: 'ops' }],
    ]);
    expect(find(docs, 'Role', 'demo-leader-election').metadata.namespace).toBe('ops');
    expect(find(docs, 'Deployment').spec!.template.spec.containers[0]!.args).toEqual([
      'run',
      'dist/handlers',
      '--namespace',
      'team-a',
      '--namespace',
      'team-b',
      '--lease-name',
      'demo',
      '--log-format',
      'json',
      '--handler-timeout',
      '600',
      '--stall-timeout',
      '900',
    ]);
  });

  test('--identity is passed to konductor run in the Deployment', async () => {
    const docs = await documents([fixture, '--name', 'demo', '--identity', 'widgets.example.com']);
    expect(find(docs, 'Deployment').spec!.template.spec.containers[0]!.args).toEqual([
      'run',
      fixture,
      '--all-namespaces',
      '--identity',
      'widgets.example.com',
      '--lease-name',
      'demo',
      '--log-format',
      'json',
      '--handler-timeout',
      '600',
      '--stall-timeout',
      '900',
    ]);
  });

  test('an --identity that is not a DNS-1123 subdomain is refused before anything is printed', async () => {
    await expect(manifests([fixture, '--identity', 'Not_Valid'])).rejects.toThrow(
      /--identity: .*Not_Valid/,
    );
  });

  test('--create-namespace prints the Namespace first', async () => {
    const docs = await documents([
      fixture,
      '--namespace',
      'ops',
      '--create-namespace',
      '--crd',
      crd,
    ]);
    expect(docs[0]).toEqual({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'ops', labels: { 'app.kubernetes.io/name': 'konductor-operator' } },
    });
  });

  test('--rule adds the rule to the ClusterRole', async () => {
    const docs = await documents([fixture, '--crd', crd, '--rule', 'apps/deployments=get,create']);
    expect(find(docs, 'ClusterRole').rules).toContainEqual({
      apiGroups: ['apps'],
      resources: ['deployments'],
      verbs: ['get', 'create'],
    });
  });

  test('a guessed plural is said on stderr and in a comment', async () => {
    const { stdout, stderr } = await manifests([fixture]);
    // Without --crd, 'wg' (a short name) can only be guessed.
    expect(stderr).toMatch(/guessed the plural 'wgs' for 'wg' in test\.konductor\.dev .*--crd/);
    expect(stdout).toMatch(/# Guessed plural\(s\) 'wgs'/);
  });

  test('--help prints the help', async () => {
    expect((await manifests(['--help'])).stdout).toBe(helpFor('manifests'));
  });

  test.each([
    [[], /at least one handler file/],
    [['--bogus', 'x.ts'], /unknown option '--bogus'/],
    [['x.ts', '--name', 'Not_A_Name'], /--name 'Not_A_Name' is not a valid name/],
    [['x.ts', '--watch-namespace', 'a'], /--watch-namespace needs --namespace-scoped/],
    [['x.ts', '--rule', 'apps/deployments=destroy'], /unknown verb/],
    [['x.ts', '--crd', '/nonexistent/crd.yaml'], /--crd \/nonexistent\/crd\.yaml does not exist/],
  ])('%j is a usage error', async (args, message) => {
    expect((await usageError(args)).message).toMatch(message);
  });

  test('--namespace-scoped refuses handlers of a cluster-scoped resource', async () => {
    const clusterScoped = fileURLToPath(
      new URL('../../fixtures/manifests/namespace-labeller.ts', import.meta.url),
    );
    expect((await usageError([clusterScoped, '--namespace-scoped'])).message).toMatch(
      /cannot serve cluster-scoped core\/namespaces/,
    );
  });

  // Read cache and indexes.
  test('resources read by @on.cache and @on.index are granted list and watch only', async () => {
    const cacheFixture = fileURLToPath(
      new URL('../../fixtures/manifests/cache-operator.ts', import.meta.url),
    );
    const docs = await documents([cacheFixture, '--name', 'demo']);
    expect(find(docs, 'ClusterRole').rules).toContainEqual({
      apiGroups: [''],
      resources: ['configmaps', 'pods', 'secrets'],
      verbs: ['list', 'watch'],
    });
  });
});
