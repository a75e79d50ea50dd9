import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import yaml from 'js-yaml';
import {
  ignoredFields,
  ignoredFieldsMessage,
  SUPPORTED_FIELDS,
  type EtcdKind,
} from '../../../src/handlers/etcd/index.js';

const crdFile = fileURLToPath(
  new URL('../../../crds/etcd.database.coreos.com.yaml', import.meta.url),
);

type Supported = (typeof SUPPORTED_FIELDS)[EtcdKind];

interface SchemaNode {
  type?: string;
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
}

interface Crd {
  spec: { names: { kind: string }; versions: Array<{ schema: { openAPIV3Schema: SchemaNode } }> };
}

const crds = yaml.loadAll(readFileSync(crdFile, 'utf8')) as Crd[];

/**
 * What the schema lets through below a node, as a Supported shape: where it preserves unknown fields
 * next to typed ones, the typed ones; anything it types completely is one field.
 */
function shapeOf(node: SchemaNode): Supported {
  if (node.type === 'array' && node.items !== undefined) {
    const item = shapeOf(node.items);
    return item === true ? true : [item];
  }
  if (node.properties === undefined) return true;
  const fields = Object.fromEntries(
    Object.entries(node.properties).map(([key, child]) => [key, shapeOf(child)]),
  );
  if (node['x-kubernetes-preserve-unknown-fields'] === true) return fields;
  return Object.values(fields).every((field) => field === true) ? true : fields;
}

function specSchema(kind: string): SchemaNode {
  const crd = crds.find((c) => c.spec.names.kind === kind);
  return crd!.spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!;
}

describe('the supported fields', () => {
  test('of EtcdCluster are the fields its schema types, with pod.etcdEnv passed to members whole', () => {
    const schema = shapeOf(specSchema('EtcdCluster')) as Record<string, Supported>;
    const pod = schema.pod as Record<string, Supported>;
    expect(pod.etcdEnv).toEqual([{ name: true, value: true }]);
    expect(SUPPORTED_FIELDS.EtcdCluster).toEqual({ ...schema, pod: { ...pod, etcdEnv: true } });
  });

  test.each<EtcdKind>(['EtcdBackup', 'EtcdRestore'])(
    'of %s are exactly the fields its schema types where it keeps unknown ones',
    (kind) => {
      expect(SUPPORTED_FIELDS[kind]).toEqual(shapeOf(specSchema(kind)));
    },
  );
});

describe('EtcdCluster', () => {
  test("names nothing in etcd-operator's example cluster", () => {
    expect(ignoredFields('EtcdCluster', { size: 3, version: '3.2.13' })).toEqual([]);
  });

  test("names nothing in etcd-operator's TLS example: the operator acts on spec.TLS.static", () => {
    const spec = {
      size: 3,
      version: '3.2.13',
      TLS: {
        static: {
          member: { peerSecret: 'etcd-peer-tls', serverSecret: 'etcd-server-tls' },
          operatorSecret: 'etcd-client-tls',
        },
      },
    };
    expect(ignoredFields('EtcdCluster', spec)).toEqual([]);
  });

  test('names TLS fields beyond the static Secrets', () => {
    expect(
      ignoredFields('EtcdCluster', {
        size: 1,
        TLS: { static: { member: { peerSecret: 'p' } }, dynamic: { issuer: 'x' } },
      }),
    ).toEqual(['spec.TLS.dynamic']);
  });

  test('names pod fields the operator does not apply to member Pods', () => {
    const spec = {
      size: 1,
      pod: {
        labels: { team: 'a' },
        antiAffinity: true,
        persistentVolumeClaimSpec: { storageClassName: 'ssd' },
        busyboxImage: 'busybox:1.28',
        DNSTimeoutInSecond: 60,
        ClusterDomain: '.cluster.local',
      },
    };
    expect(ignoredFields('EtcdCluster', spec)).toEqual([
      'spec.pod.antiAffinity',
      'spec.pod.persistentVolumeClaimSpec',
      'spec.pod.busyboxImage',
      'spec.pod.DNSTimeoutInSecond',
      'spec.pod.ClusterDomain',
    ]);
  });

  test('does not name pod.antiAffinity: false, the default this operator keeps too', () => {
    expect(ignoredFields('EtcdCluster', { size: 1, pod: { antiAffinity: false } })).toEqual([]);
  });

  test('names nothing in a spec of supported fields only', () => {
    const spec = {
      size: 3,
      repository: 'quay.io/coreos/etcd',
      version: 'v3.4.23',
      paused: false,
      pod: {
        labels: { team: 'a' },
        annotations: { note: 'x' },
        nodeSelector: { disk: 'ssd' },
        resources: { requests: { cpu: '100m' } },
        tolerations: [{ key: 'dedicated', operator: 'Exists' }],
        affinity: { nodeAffinity: {} },
        etcdEnv: [
          {
            name: 'ETCD_QUOTA_BACKEND_BYTES',
            valueFrom: { configMapKeyRef: { name: 'etcd', key: 'quota' } },
          },
        ],
        securityContext: { runAsNonRoot: true },
      },
    };
    expect(ignoredFields('EtcdCluster', spec)).toEqual([]);
  });
});

describe('EtcdBackup', () => {
  test("names nothing in etcd-operator's S3 backup example", () => {
    expect(
      ignoredFields('EtcdBackup', {
        etcdEndpoints: ['https://example-etcd-cluster-client:2379'],
        storageType: 'S3',
        s3: { path: 'bucket/key', awsSecret: 'aws' },
      }),
    ).toEqual([]);
  });

  test('names unknown policy and S3 fields, not clientTLSSecret, which the operator acts on', () => {
    const spec = {
      etcdEndpoints: ['http://db-client:2379'],
      storageType: 'S3',
      clientTLSSecret: 'etcd-client-tls',
      backupPolicy: { backupIntervalInSecond: 60, maxBackups: 3, compress: true },
      s3: { path: 'bucket/key', awsSecret: 'aws', region: 'eu-west-1' },
    };
    expect(ignoredFields('EtcdBackup', spec)).toEqual([
      'spec.backupPolicy.compress',
      'spec.s3.region',
    ]);
  });
});

describe('EtcdRestore', () => {
  test("names nothing in etcd-operator's restore example", () => {
    expect(
      ignoredFields('EtcdRestore', {
        etcdCluster: { name: 'example-etcd-cluster' },
        backupStorageType: 'S3',
        s3: { path: 'bucket/key', awsSecret: 'aws' },
      }),
    ).toEqual([]);
  });

  test('names a storage block of a type that is not served, and unknown Local fields', () => {
    const spec = {
      etcdCluster: { name: 'db' },
      backupStorageType: 'Local',
      local: { path: 'db/1', checksum: 'x' },
      abs: { path: 'container/blob' },
    };
    expect(ignoredFields('EtcdRestore', spec)).toEqual(['spec.local.checksum', 'spec.abs']);
  });
});

describe('the Event message', () => {
  test('names the kind, the generation, every field, and what to do', () => {
    expect(ignoredFieldsMessage('EtcdCluster', ['spec.pod.busyboxImage'], 2)).toBe(
      'this EtcdCluster (generation 2) sets 1 field that Konductor keeps but does not act on: spec.pod.busyboxImage. ' +
        'It has no effect here; remove it (docs/upstream-compatibility.md lists what is supported).',
    );
  });

  test('stays within an Event for thousands of hostile fields', () => {
    const spec = Object.fromEntries(
      Array.from({ length: 3000 }, (_, i) => [`x${'y'.repeat(200)}${i}`, i]),
    );
    const paths = ignoredFields('EtcdCluster', { size: 1, ...spec });
    expect(paths).toHaveLength(3000);
    expect(paths[0]).toBe(`spec["x${'y'.repeat(39)}..."]`);
    const message = ignoredFieldsMessage('EtcdCluster', paths, 1);
    expect(message.length).toBeLessThan(1024);
    expect(message).toMatch(/sets 3000 fields .* and \d+ more\. They have no effect here/);
  });
});
