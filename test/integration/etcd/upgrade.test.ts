// An EtcdCluster upgrade on real etcd processes run by the local pod runner.
//
// Only etcd 3.4.23 exists on this machine. The operator upgrades a member by patching its Pod's image
// and `etcd.version` annotation; the pod runner, like a kubelet, restarts the container in place on
// an image change, but with the same local binary. So the member processes still run 3.4.23 after
// the "upgrade" to 3.4.24: these specs prove the choreography (one member at a time, in place, data
// kept, status and conditions), not a real change of etcd version.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  clusterPath,
  createCluster,
  etcdClient,
  installEtcdCrds,
  readCluster,
  settledAt,
  startEtcdOperator,
  type EtcdClusterView,
  type EtcdHarness,
} from '../../support/etcd.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';

const FROM = '3.4.23';
const TO = '3.4.24';
const CLUSTER = 'upgraded';
const SAMPLE_EVERY_MS = 100;
const UPGRADE_TIMEOUT_MS = 180_000;

interface MemberPod {
  metadata: { name: string; uid: string; annotations?: Record<string, string> };
  spec: { containers: { name: string; image: string }[] };
  status?: {
    phase?: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: { restartCount: number; image: string }[];
  };
}

/** What one look at the cluster saw during the upgrade. */
interface Sample {
  at: number;
  pods: {
    name: string;
    uid: string;
    version: string | undefined;
    ready: boolean;
    restartCount: number | undefined;
  }[];
  targetVersion: string | undefined;
  upgrading: string | undefined;
}

/** A sample as a line a failure message can show: ms since the version change, and each Pod's version and readiness. */
const describeSample = (s: Sample, start: number): string =>
  `+${s.at - start} ms: ${s.pods.map((p) => `${p.name.slice(-4)}@${p.version}${p.ready ? '' : ' NOT READY'}`).join(', ')}`;

const isReady = (pod: MemberPod): boolean =>
  pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const conditionOf = (cluster: EtcdClusterView, type: string): string | undefined =>
  cluster.status?.conditions?.find((c) => c.type === type)?.status;

async function pods(h: EtcdHarness): Promise<MemberPod[]> {
  const list = await h.api.request<{ items: MemberPod[] }>(
    'GET',
    `/api/v1/namespaces/${h.namespace}/pods`,
    { query: { labelSelector: `app=etcd,etcd_cluster=${CLUSTER}` } },
  );
  return list.items;
}

/** Status reports the upgrade done: the new current version, available, no longer upgrading. */
function statusSaysDone(cluster: EtcdClusterView): boolean {
  return (
    cluster.status?.currentVersion === TO &&
    conditionOf(cluster, 'Available') === 'True' &&
    conditionOf(cluster, 'Upgrading') !== 'True'
  );
}

/** The upgrade is over: every Pod runs the new image, restarted and Ready, and status says so. */
function finished(sample: Sample, cluster: EtcdClusterView): boolean {
  return (
    sample.pods.length === 3 &&
    sample.pods.every((p) => p.version === TO && p.ready && p.restartCount === 1) &&
    statusSaysDone(cluster)
  );
}

describe(`EtcdCluster upgrade from ${FROM} to ${TO}`, () => {
  let h: EtcdHarness;
  const samples: Sample[] = [];
  let before: MemberPod[] = [];
  let after: MemberPod[] = [];
  let final: EtcdClusterView;
  /** The first status seen that reports the upgrade done. */
  let firstDone: EtcdClusterView | undefined;

  // The upgrade runs once, here; each spec below checks one property of what was observed.
  beforeAll(async () => {
    const kc = sharedKubeConfig();
    await installEtcdCrds(kc);
    h = await startEtcdOperator(kc, await uniqueNamespace(kc, 'etcd-upgrade'));
    await createCluster(h, CLUSTER, { size: 3 });
    await settledAt(h, CLUSTER, 3, { version: FROM, available: true, timeoutMs: 90_000 });
    const etcd = etcdClient(h, CLUSTER);
    await etcd.put('before-upgrade').value('kept');
    etcd.close();
    before = await pods(h);

    await h.api.request('PATCH', clusterPath(h.namespace, CLUSTER), {
      body: { spec: { version: TO } },
      contentType: 'application/merge-patch+json',
    });
    const deadline = Date.now() + UPGRADE_TIMEOUT_MS;
    for (;;) {
      const [current, cluster] = await Promise.all([pods(h), readCluster(h, CLUSTER)]);
      const sample: Sample = {
        at: Date.now(),
        pods: current.map((p) => ({
          name: p.metadata.name,
          uid: p.metadata.uid,
          version: p.metadata.annotations?.['etcd.version'],
          ready: isReady(p),
          restartCount: p.status?.containerStatuses?.[0]?.restartCount,
        })),
        targetVersion: cluster.status?.targetVersion ?? undefined,
        upgrading: conditionOf(cluster, 'Upgrading'),
      };
      samples.push(sample);
      if (!firstDone && statusSaysDone(cluster)) firstDone = cluster;
      if (finished(sample, cluster)) break;
      if (Date.now() > deadline)
        throw new Error(
          `the upgrade did not finish within ${UPGRADE_TIMEOUT_MS} ms; last sample: ${JSON.stringify(sample)}`,
        );
      await sleep(SAMPLE_EVERY_MS);
    }
    await settledAt(h, CLUSTER, 3, { version: TO, available: true, timeoutMs: 90_000 });
    after = await pods(h);
    final = await readCluster(h, CLUSTER);
  }, 300_000);

  afterAll(async () => {
    await h?.stop();
  });

  test('every Pod ends annotated etcd.version 3.4.24 and running quay.io/coreos/etcd:v3.4.24', () => {
    expect(after).toHaveLength(3);
    for (const pod of after) {
      expect(pod.metadata.annotations?.['etcd.version']).toBe(TO);
      expect(pod.spec.containers[0]!.image).toBe(`quay.io/coreos/etcd:v${TO}`);
      expect(pod.status?.containerStatuses?.[0]?.image).toBe(`quay.io/coreos/etcd:v${TO}`);
    }
  });

  test('members are upgraded in place: the same Pods, each restarted exactly once', () => {
    expect(before.map((p) => p.metadata.annotations?.['etcd.version'])).toEqual([FROM, FROM, FROM]);
    expect(before.map((p) => p.status?.containerStatuses?.[0]?.restartCount)).toEqual([0, 0, 0]);
    expect(after.map((p) => p.metadata.uid).sort()).toEqual(
      before.map((p) => p.metadata.uid).sort(),
    );
    expect(after.map((p) => p.status?.containerStatuses?.[0]?.restartCount)).toEqual([1, 1, 1]);
    // No Pod came or went at any moment in between either.
    const uids = new Set(before.map((p) => p.metadata.uid));
    expect(
      samples.filter((s) => s.pods.length !== 3 || s.pods.some((p) => !uids.has(p.uid))),
    ).toEqual([]);
  });

  test('each member was seen not Ready while it restarted (the sampling saw every restart)', () => {
    const seenUnready = new Set(
      samples.flatMap((s) => s.pods.filter((p) => !p.ready).map((p) => p.name)),
    );
    expect([...seenUnready].sort()).toEqual(before.map((p) => p.metadata.name).sort());
  });

  test('at most one member Pod was not Ready at any moment', () => {
    const overlapping = samples.filter((s) => s.pods.filter((p) => !p.ready).length > 1);
    expect(overlapping.map((s) => describeSample(s, samples[0]!.at))).toEqual([]);
  });

  test('at most one member was mid-upgrade (new version, not yet Ready) at any moment', () => {
    const overlapping = samples.filter(
      (s) => s.pods.filter((p) => p.version === TO && !p.ready).length > 1,
    );
    expect(overlapping.map((s) => describeSample(s, samples[0]!.at))).toEqual([]);
  });

  test('members are upgraded one after another, never two restarted in one look', () => {
    // restartCount goes 0 → 1 once per Pod; between two looks at most one more Pod may have restarted.
    const restarted = samples.map((s) => s.pods.filter((p) => p.restartCount === 1).length);
    const jumps = restarted.slice(1).map((n, i) => n - restarted[i]!);
    expect(Math.max(...jumps)).toBeLessThanOrEqual(1);
    expect(restarted.at(-1)).toBe(3);
  });

  test('status showed targetVersion 3.4.24 and an Upgrading condition True during the upgrade', () => {
    expect(samples.some((s) => s.targetVersion === TO)).toBe(true);
    expect(samples.some((s) => s.upgrading === 'True')).toBe(true);
  });

  test('at the end status reports currentVersion 3.4.24, no targetVersion, Available True and Upgrading False', () => {
    expect(final.status?.currentVersion).toBe(TO);
    expect(final.status?.targetVersion ?? '').toBe('');
    expect(conditionOf(final, 'Available')).toBe('True');
    expect(conditionOf(final, 'Upgrading')).toBe('False');
  });

  test('the first status that reports the upgrade done lists every member as ready', () => {
    // Available must not run ahead of the Pods' readiness.
    expect(firstDone?.status?.members).toEqual({
      ready: after.map((p) => p.metadata.name).sort(),
      unready: [],
    });
  });

  test('data written before the upgrade is readable after it', async () => {
    const etcd = etcdClient(h, CLUSTER);
    try {
      await expect(etcd.get('before-upgrade').string()).resolves.toBe('kept');
    } finally {
      etcd.close();
    }
  });
});
