import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  loadAllYaml,
  type V1CustomResourceDefinition,
  type V1JSONSchemaProps,
} from '@kubernetes/client-node';
import {
  DEFAULT_AFTER_QUORUM_LOST_SECONDS,
  MAX_AFTER_QUORUM_LOST_SECONDS,
  MIN_AFTER_QUORUM_LOST_SECONDS,
} from '../../../src/handlers/etcd/restore-policy.js';
import { GROUP } from '../../../src/handlers/etcd/types.js';

const crdFile = fileURLToPath(
  new URL('../../../crds/etcd.database.coreos.com.yaml', import.meta.url),
);
const exampleFile = fileURLToPath(new URL('../../../examples/etcd.yaml', import.meta.url));

// loadAllYaml is what readCrds (and so installCrds and `npm start`) uses. It turns CRDs into
// client-node models, whose property names differ from the wire format for a few schema keywords
// (`_enum`, `_default`, `x_kubernetes_preserve_unknown_fields`) and which drop keys they do not know:
// a misspelt keyword in the YAML would never reach the API server, and fails these assertions.
function load(file: string): Record<string, unknown>[] {
  return (loadAllYaml(readFileSync(file, 'utf8')) as unknown[]).map(
    (doc) => JSON.parse(JSON.stringify(doc)) as Record<string, unknown>,
  );
}

const crds = loadAllYaml(readFileSync(crdFile, 'utf8')) as V1CustomResourceDefinition[];

function crd(kind: string): V1CustomResourceDefinition {
  const found = crds.find((c) => c.spec.names.kind === kind);
  if (found === undefined) throw new Error(`no CRD for ${kind}`);
  return found;
}

function version(kind: string) {
  const versions = crd(kind).spec.versions;
  expect(versions).toHaveLength(1);
  return versions[0]!;
}

function schema(kind: string): V1JSONSchemaProps {
  return version(kind).schema!.openAPIV3Schema!;
}

/** The schema at a dotted path of property names, e.g. `spec.backupPolicy.maxBackups`. */
function at(kind: string, path: string): V1JSONSchemaProps {
  let node = schema(kind);
  for (const key of path.split('.')) {
    const next = node.properties?.[key];
    if (next === undefined) throw new Error(`${kind}: no schema at ${path} (missing ${key})`);
    node = next;
  }
  return node;
}

function columns(kind: string): Record<string, string> {
  return Object.fromEntries(
    (version(kind).additionalPrinterColumns ?? []).map((c) => [c.name, c.jsonPath]),
  );
}

/** Whether unknown fields are kept. `items` is untyped in client-node, so below it the keys stay as written. */
function preserves(node: V1JSONSchemaProps): boolean {
  return (
    node.x_kubernetes_preserve_unknown_fields === true ||
    (node as Record<string, unknown>)['x-kubernetes-preserve-unknown-fields'] === true
  );
}

/** Every object node in a schema must say what it holds: properties, additionalProperties or preserve-unknown. */
function untypedObjects(node: V1JSONSchemaProps, path: string): string[] {
  const here =
    node.type === 'object' &&
    node.properties === undefined &&
    node.additionalProperties === undefined &&
    !preserves(node)
      ? [path]
      : [];
  const children = Object.entries(node.properties ?? {}).flatMap(([key, child]) =>
    untypedObjects(child, `${path}.${key}`),
  );
  const items =
    node.items !== undefined ? untypedObjects(node.items as V1JSONSchemaProps, `${path}[]`) : [];
  return [...here, ...children, ...items];
}

describe('crds/etcd.database.coreos.com.yaml', () => {
  test('defines the three namespaced v1beta2 kinds of the original API', () => {
    expect(
      crds.every(
        (c) => c.apiVersion === 'apiextensions.k8s.io/v1' && c.kind === 'CustomResourceDefinition',
      ),
    ).toBe(true);
    expect(
      crds.map((c) => [
        c.metadata?.name,
        c.spec.group,
        c.spec.scope,
        c.spec.names.kind,
        c.spec.names.plural,
      ]),
    ).toEqual([
      ['etcdclusters.etcd.database.coreos.com', GROUP, 'Namespaced', 'EtcdCluster', 'etcdclusters'],
      ['etcdbackups.etcd.database.coreos.com', GROUP, 'Namespaced', 'EtcdBackup', 'etcdbackups'],
      ['etcdrestores.etcd.database.coreos.com', GROUP, 'Namespaced', 'EtcdRestore', 'etcdrestores'],
    ]);
    expect(crd('EtcdCluster').spec.names.shortNames).toEqual(['etcd']);
    for (const c of crds) {
      expect(c.spec.versions.map((v) => [v.name, v.served, v.storage])).toEqual([
        ['v1beta2', true, true],
      ]);
    }
  });

  test.each(['EtcdCluster', 'EtcdBackup', 'EtcdRestore'])(
    '%s has a status subresource and a structural schema',
    (kind) => {
      expect(version(kind).subresources?.status).toEqual({});
      expect(schema(kind).type).toBe('object');
      expect(schema(kind).required).toEqual(['spec']);
      expect(at(kind, 'status').type).toBe('object');
      expect(untypedObjects(schema(kind), kind)).toEqual([]);
    },
  );

  test('EtcdCluster: size 1..7 required, version pattern and defaults, pod and TLS kept', () => {
    expect(at('EtcdCluster', 'spec').required).toEqual(['size']);
    expect(at('EtcdCluster', 'spec.size')).toMatchObject({
      type: 'integer',
      minimum: 1,
      maximum: 7,
    });
    expect(at('EtcdCluster', 'spec.repository')._default).toBe('quay.io/coreos/etcd');
    const versionSchema = at('EtcdCluster', 'spec.version');
    expect(versionSchema._default).toBe('3.4.23');
    const pattern = new RegExp(versionSchema.pattern!);
    for (const ok of ['3.4.23', 'v3.4.23', '3.5.0-rc.1', 'v3.2.13'])
      expect(pattern.test(ok)).toBe(true);
    for (const bad of ['3.4', 'latest', 'vv3.4.23', '3.4.23 '])
      expect(pattern.test(bad)).toBe(false);
    expect(pattern.test(versionSchema._default as string)).toBe(true);
    expect(at('EtcdCluster', 'spec.paused').type).toBe('boolean');
    expect(preserves(at('EtcdCluster', 'spec.pod'))).toBe(true);
    for (const map of ['labels', 'annotations', 'nodeSelector']) {
      expect(at('EtcdCluster', `spec.pod.${map}`).type).toBe('object');
    }
    expect(preserves(at('EtcdCluster', 'spec.TLS'))).toBe(true);
    for (const field of [
      'phase',
      'reason',
      'controlPaused',
      'size',
      'serviceName',
      'clientPort',
      'currentVersion',
      'targetVersion',
      'members',
      'conditions',
    ]) {
      expect(at('EtcdCluster', `status.${field}`)).toBeDefined();
    }
    expect(at('EtcdCluster', 'status.members.ready')).toEqual({
      type: 'array',
      items: { type: 'string' },
    });
    expect(at('EtcdCluster', 'status.members.unready')).toEqual({
      type: 'array',
      items: { type: 'string' },
    });
  });

  test("EtcdCluster: restorePolicy's wait has the operator's own bounds and default", () => {
    expect(at('EtcdCluster', 'spec.restorePolicy.afterQuorumLostSeconds')).toMatchObject({
      type: 'integer',
      minimum: MIN_AFTER_QUORUM_LOST_SECONDS,
      maximum: MAX_AFTER_QUORUM_LOST_SECONDS,
      _default: DEFAULT_AFTER_QUORUM_LOST_SECONDS,
    });
  });

  // etcd-operator's manifests may carry fields the operator does not act on (pod.antiAffinity,
  // backupPolicy fields of other versions...): kept as written and named in an IgnoredFields Event, never pruned.
  test.each([
    ['EtcdCluster', 'spec'],
    ['EtcdCluster', 'spec.pod'],
    ['EtcdBackup', 'spec'],
    ['EtcdBackup', 'spec.backupPolicy'],
    ['EtcdBackup', 'spec.s3'],
    ['EtcdBackup', 'spec.local'],
    ['EtcdRestore', 'spec'],
    ['EtcdRestore', 'spec.s3'],
    ['EtcdRestore', 'spec.local'],
  ])('%s %s keeps fields the schema does not type', (kind, path) => {
    expect(preserves(at(kind, path))).toBe(true);
  });

  test('EtcdBackup: endpoints and storage type required, S3 or Local, non-negative policy, capitalised Reason', () => {
    expect(at('EtcdBackup', 'spec').required).toEqual(['etcdEndpoints', 'storageType']);
    expect(at('EtcdBackup', 'spec.etcdEndpoints')).toMatchObject({
      type: 'array',
      minItems: 1,
      items: { type: 'string' },
    });
    expect(at('EtcdBackup', 'spec.storageType')._enum).toEqual(['S3', 'Local']);
    for (const field of ['timeoutInSecond', 'backupIntervalInSecond', 'maxBackups']) {
      expect(at('EtcdBackup', `spec.backupPolicy.${field}`)).toMatchObject({
        type: 'integer',
        minimum: 0,
      });
    }
    expect(Object.keys(at('EtcdBackup', 'spec.s3').properties!)).toEqual([
      'path',
      'awsSecret',
      'endpoint',
      'forcePathStyle',
    ]);
    expect(Object.keys(at('EtcdBackup', 'spec.local').properties!)).toEqual(['path']);
    expect(Object.keys(at('EtcdBackup', 'status').properties!).sort()).toEqual(
      [
        'Reason',
        'backups',
        'etcdRevision',
        'etcdVersion',
        'lastBackup',
        'lastBackupCluster',
        'lastBackupPath',
        'lastSuccessDate',
        'succeeded',
      ].sort(),
    );
  });

  test('EtcdRestore: cluster name and storage type required, lower-case reason', () => {
    expect(at('EtcdRestore', 'spec').required).toEqual(['etcdCluster', 'backupStorageType']);
    expect(at('EtcdRestore', 'spec.etcdCluster').required).toEqual(['name']);
    expect(at('EtcdRestore', 'spec.backupStorageType')._enum).toEqual(['S3', 'Local']);
    expect(at('EtcdRestore', 'spec.s3')).toEqual(at('EtcdBackup', 'spec.s3'));
    expect(at('EtcdRestore', 'spec.local')).toEqual(at('EtcdBackup', 'spec.local'));
    expect(Object.keys(at('EtcdRestore', 'status').properties!).sort()).toEqual([
      'backup',
      'cluster',
      'reason',
      'source',
      'succeeded',
      'token',
    ]);
    // Only a DNS-1123 name, so no `/` or `..` ever reaches an API path.
    const pattern = new RegExp(at('EtcdRestore', 'spec.etcdCluster.name').pattern!);
    expect(pattern.test('db')).toBe(true);
    expect(pattern.test('../../victim/etcdclusters/victim')).toBe(false);
  });

  // The test control plane's kube-apiserver (1.20 built with a newer Go) treats "" as null, so a
  // plain `type: string` rejects an empty string; strings that can legitimately be empty are nullable.
  test.each([
    [
      'EtcdCluster',
      'status',
      ['phase', 'reason', 'serviceName', 'currentVersion', 'targetVersion'],
    ],
    ['EtcdBackup', 'status', ['Reason', 'etcdVersion', 'lastSuccessDate', 'lastBackup']],
    ['EtcdRestore', 'status', ['reason']],
  ])('%s %s strings accept ""', (kind, path, fields) => {
    for (const field of fields)
      expect(at(kind, `${path}.${field}`)).toMatchObject({ type: 'string', nullable: true });
  });

  test('empty label, annotation, node selector and env values are accepted', () => {
    for (const map of ['labels', 'annotations', 'nodeSelector']) {
      expect(at('EtcdCluster', `spec.pod.${map}`).additionalProperties).toEqual({
        type: 'string',
        nullable: true,
      });
    }
    const env = at('EtcdCluster', 'spec.pod.etcdEnv').items as Record<string, unknown>;
    expect(env).toMatchObject({
      required: ['name'],
      properties: { name: { type: 'string' }, value: { type: 'string', nullable: true } },
    });
  });

  test('printer columns', () => {
    expect(columns('EtcdCluster')).toMatchObject({
      Size: '.spec.size',
      Members: '.status.size',
      Version: '.status.currentVersion',
      Phase: '.status.phase',
      Age: '.metadata.creationTimestamp',
    });
    expect(columns('EtcdBackup')).toMatchObject({
      Storage: '.spec.storageType',
      Interval: '.spec.backupPolicy.backupIntervalInSecond',
      Succeeded: '.status.succeeded',
      Last: '.status.lastSuccessDate',
      Age: '.metadata.creationTimestamp',
    });
    expect(columns('EtcdRestore')).toMatchObject({
      Cluster: '.spec.etcdCluster.name',
      Succeeded: '.status.succeeded',
      Age: '.metadata.creationTimestamp',
    });
  });
});

describe('examples/etcd.yaml', () => {
  test('a three-member cluster and a 30 s Local backup of it, within the schema', () => {
    const [cluster, backup, ...rest] = load(exampleFile);
    expect(rest).toEqual([]);
    expect(cluster).toMatchObject({
      apiVersion: `${GROUP}/v1beta2`,
      kind: 'EtcdCluster',
      metadata: { name: 'example-etcd-cluster', namespace: 'default' },
      spec: { size: 3 },
    });
    expect(
      new RegExp(at('EtcdCluster', 'spec.version').pattern!).test(
        String((cluster!.spec as { version?: string }).version ?? '3.4.23'),
      ),
    ).toBe(true);
    expect(backup).toMatchObject({
      apiVersion: `${GROUP}/v1beta2`,
      kind: 'EtcdBackup',
      metadata: { name: 'example-etcd-cluster-periodic-backup', namespace: 'default' },
      spec: {
        etcdEndpoints: ['http://example-etcd-cluster-client:2379'],
        storageType: 'Local',
        backupPolicy: { backupIntervalInSecond: 30, maxBackups: 5 },
        local: { path: 'example-etcd-cluster' },
      },
    });
  });
});
