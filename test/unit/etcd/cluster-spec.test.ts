import {
  DEFAULT_REPOSITORY,
  DEFAULT_VERSION,
  quorum,
  readClusterSpec,
  type ClusterSpec,
} from '../../../src/handlers/etcd/cluster-spec.js';
import type { EtcdClusterSpec } from '../../../src/handlers/etcd/types.js';

/** The spec of a valid read; fails the test with the problems otherwise. */
function valid(spec: Partial<EtcdClusterSpec> | undefined): ClusterSpec {
  const read = readClusterSpec(spec);
  if ('problems' in read)
    throw new Error(`expected a valid spec, got: ${read.problems.join('; ')}`);
  return read.spec;
}

/** The problems of an invalid read; fails the test when the spec was accepted. */
function problems(spec: unknown): string[] {
  const read = readClusterSpec(spec as Partial<EtcdClusterSpec>);
  if (!('problems' in read))
    throw new Error(`expected problems, got the spec ${JSON.stringify(read.spec)}`);
  return read.problems;
}

describe('readClusterSpec defaults', () => {
  it('fills repository, version, paused and pod when only size is given', () => {
    expect(valid({ size: 3 })).toEqual({
      size: 3,
      repository: DEFAULT_REPOSITORY,
      version: DEFAULT_VERSION,
      paused: false,
      pod: {},
    });
  });

  it('defaults to quay.io/coreos/etcd at 3.4.23, the etcd these machines have', () => {
    expect(DEFAULT_REPOSITORY).toBe('quay.io/coreos/etcd');
    expect(DEFAULT_VERSION).toBe('3.4.23');
  });

  it('keeps what the spec sets', () => {
    const pod = { labels: { team: 'storage' }, annotations: { owner: 'me' } };
    expect(
      valid({ size: 5, repository: 'registry.local/etcd', version: '3.5.9', paused: true, pod }),
    ).toEqual({
      size: 5,
      repository: 'registry.local/etcd',
      version: '3.5.9',
      paused: true,
      pod,
    });
  });

  it('treats only paused: true as paused', () => {
    expect(valid({ size: 1, paused: false }).paused).toBe(false);
    expect(valid({ size: 1, paused: 'true' as unknown as boolean }).paused).toBe(false);
  });
});

describe('readClusterSpec version', () => {
  it('strips a leading v', () => {
    expect(valid({ size: 1, version: 'v3.4.24' }).version).toBe('3.4.24');
  });

  it('accepts a pre-release or build suffix', () => {
    expect(valid({ size: 1, version: '3.5.0-rc.1' }).version).toBe('3.5.0-rc.1');
    expect(valid({ size: 1, version: '3.5.0+build.7' }).version).toBe('3.5.0+build.7');
  });

  it.each(['latest', '3.4', '3.4.x', 'vv3.4.23', ''])(
    'refuses %j, quoting the value as written',
    (version) => {
      expect(problems({ size: 1, version })).toEqual([
        `spec.version must look like 3.4.23 (got ${JSON.stringify(version)})`,
      ]);
    },
  );
});

describe('readClusterSpec size', () => {
  it.each([1, 7])('accepts %d', (size) => {
    expect(valid({ size }).size).toBe(size);
  });

  it.each([
    ['0', 0],
    ['8', 8],
    ['a negative size', -1],
    ['a fraction', 2.5],
    ['a string', '3'],
    ['null', null],
  ])('refuses %s', (_what, size) => {
    expect(problems({ size })).toEqual([
      `spec.size must be an integer from 1 to 7 (got ${JSON.stringify(size)})`,
    ]);
  });

  it('refuses a missing size, and a missing spec', () => {
    expect(problems({})).toEqual(['spec.size must be an integer from 1 to 7 (got undefined)']);
    expect(problems(undefined)).toEqual([
      'spec.size must be an integer from 1 to 7 (got undefined)',
    ]);
  });
});

describe('readClusterSpec repository', () => {
  it.each([
    ['empty', ''],
    ['not a string', 42],
  ])('refuses a repository that is %s', (_what, repository) => {
    expect(problems({ size: 1, repository })).toEqual([
      'spec.repository must be a non-empty image repository',
    ]);
  });
});

describe('readClusterSpec reserved pod labels and annotations', () => {
  it.each(['app', 'etcd_cluster', 'etcd_node', 'etcd_anything'])(
    'refuses the label %s, which the operator selects on',
    (label) => {
      expect(problems({ size: 1, pod: { labels: { [label]: 'x' } } })).toEqual([
        `spec.pod.labels.${label} is reserved for the operator's own selectors`,
      ]);
    },
  );

  it.each(['application', 'etcd', 'my-app', 'team'])('accepts the label %s', (label) => {
    expect(valid({ size: 1, pod: { labels: { [label]: 'x' } } }).pod.labels).toEqual({
      [label]: 'x',
    });
  });

  it('refuses the annotation etcd.version, which drives upgrades', () => {
    expect(problems({ size: 1, pod: { annotations: { 'etcd.version': '3.4.23' } } })).toEqual([
      'spec.pod.annotations."etcd.version" is reserved: it drives upgrades',
    ]);
  });

  it('refuses annotations under etcd.database.coreos.com/, which record what the operator made each member with', () => {
    expect(
      problems({ size: 1, pod: { annotations: { 'etcd.database.coreos.com/tls-mode': 'peer' } } }),
    ).toEqual([
      'spec.pod.annotations."etcd.database.coreos.com/tls-mode" is reserved: annotations under etcd.database.coreos.com/ record what the operator made each member with',
    ]);
  });

  it('accepts other annotations', () => {
    expect(
      valid({ size: 1, pod: { annotations: { 'prometheus.io/scrape': 'true' } } }).pod.annotations,
    ).toEqual({ 'prometheus.io/scrape': 'true' });
  });
});

describe('readClusterSpec with several problems', () => {
  it('reports every problem at once, so one fix is enough', () => {
    expect(
      problems({
        size: 0,
        version: 'latest',
        repository: '',
        pod: { labels: { app: 'x' }, annotations: { 'etcd.version': '1' } },
      }),
    ).toEqual([
      'spec.size must be an integer from 1 to 7 (got 0)',
      'spec.version must look like 3.4.23 (got "latest")',
      'spec.repository must be a non-empty image repository',
      "spec.pod.labels.app is reserved for the operator's own selectors",
      'spec.pod.annotations."etcd.version" is reserved: it drives upgrades',
    ]);
  });
});

describe('quorum', () => {
  it.each([
    [1, 1],
    [2, 2],
    [3, 2],
    [4, 3],
    [5, 3],
    [6, 4],
    [7, 4],
  ])('of %d members is %d', (members, votes) => {
    expect(quorum(members)).toBe(votes);
  });
});
