/**
 * The bundled etcd operator on a real node, with a writer putting keys through the cluster's client
 * Service the whole time: scale 3 → 5 → 3, a member's container killed and the member replaced, and a
 * real upgrade from Debian bookworm's etcd 3.4 to Debian sid's 3.5, one member at a time. At the end
 * every acknowledged write is read back, and the longest time without an acknowledged write is
 * reported for each step (under 5 s for the upgrade). Then the newest of periodic Local backups is
 * restored by an EtcdRestore, periodic backups go to S3, and the operator restores the newest of them by itself
 * when a majority of members is killed (restorePolicy).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runCommand } from '../../../src/testing/run-command.js';
import {
  REPO,
  deployOperator,
  getJson,
  killProcessInPod,
  kubectlOk,
  localNode,
  waitFor,
} from '../support/node.js';

const CLUSTER = 'e2e-lifecycle';
const FROM = '3.4.23';
const PREFIX = 'e2e/';
const WRITER = resolve(REPO, 'test/e2e/support/etcd-writer.mjs');
const S3_SERVER = resolve(REPO, 'test/e2e/support/s3-in-node.mjs');
/** The node's own address on the Pod bridge: Pods reach it, nothing outside this machine does. */
const NODE_IP = '10.244.0.1';
const S3_ENDPOINT = `http://${NODE_IP}:9000`;

interface MemberPod {
  metadata: { name: string; uid: string; deletionTimestamp?: string };
  status?: {
    phase?: string;
    podIP?: string;
    containerStatuses?: { name: string; image: string; ready: boolean }[];
  };
}
interface Cluster {
  status?: { phase?: string; currentVersion?: string; members?: { ready?: string[] } };
}
interface WriterReport {
  attempts: number;
  acked: { key: string; at: number }[];
  failures: { at: number; error: string }[];
}

let to = '';
let scratch = '';
let writer: Promise<WriterReport> | undefined;
let s3: Promise<{ keys: string[] }> | undefined;
const steps: { name: string; from: number; to: number }[] = [];

/** The etcd version of the image built from Debian sid (the version the upgrade goes to). */
async function sidVersion(): Promise<string> {
  const run = await runCommand(
    process.execPath,
    [resolve(REPO, 'scripts/images/images.mjs'), '--only', 'etcd-sid'],
    { timeoutMs: 600_000 },
  );
  if (run.code !== 0)
    throw new Error(
      `scripts/images/images.mjs --only etcd-sid exited ${run.code}: ${run.stderr.trim()}`,
    );
  const [image] = JSON.parse(run.stdout) as { reference: string }[];
  return /:v(\S+)$/.exec(image!.reference)![1]!;
}

async function memberPods(): Promise<MemberPod[]> {
  const list = await getJson<{ items: MemberPod[] }>(['pods', '-l', `etcd_cluster=${CLUSTER}`]);
  return (list?.items ?? []).filter((pod) => pod.metadata.deletionTimestamp === undefined);
}

/** The cluster Running at `size` members, each Pod's etcd container Ready on the image of `version`. */
async function settled(size: number, version: string): Promise<boolean> {
  const cluster = await getJson<Cluster>(['etcdcluster', CLUSTER]);
  if (
    cluster?.status?.phase !== 'Running' ||
    cluster.status.currentVersion !== version ||
    cluster.status.members?.ready?.length !== size
  )
    return false;
  const pods = await memberPods();
  const image = `quay.io/coreos/etcd:v${version}`;
  return (
    pods.length === size &&
    pods.every((pod) =>
      pod.status?.containerStatuses?.some((c) => c.name === 'etcd' && c.ready && c.image === image),
    )
  );
}

async function step(
  name: string,
  change: () => Promise<void>,
  size: number,
  version: string,
): Promise<void> {
  const from = Date.now();
  await change();
  await waitFor(() => settled(size, version), {
    what: `${CLUSTER}: ${name} done (${size} Ready members on ${version})`,
    timeoutMs: 420_000,
    intervalMs: 1_000,
  });
  steps.push({ name, from, to: Date.now() });
  process.stderr.write(`[e2e] etcd ${name}: ${((Date.now() - from) / 1000).toFixed(1)} s\n`);
}

/** The longest time in [from, to] without an acknowledged write, counted from the last one before it. */
function longestGapMs(acked: readonly { at: number }[], from: number, to: number): number {
  let previous = [...acked].reverse().find((write) => write.at <= from)?.at ?? from;
  let longest = 0;
  for (const write of acked) {
    if (write.at <= from) continue;
    if (write.at > to) break;
    longest = Math.max(longest, write.at - previous);
    previous = write.at;
  }
  return Math.max(longest, to - previous);
}

async function range(url: string): Promise<Set<string>> {
  const b64 = (text: string): string => Buffer.from(text).toString('base64');
  const end = PREFIX.slice(0, -1) + String.fromCharCode(PREFIX.charCodeAt(PREFIX.length - 1) + 1);
  const body = JSON.stringify({ key: b64(PREFIX), range_end: b64(end), keys_only: true });
  const run = await localNode().runInNode('curl', [
    '-sf',
    '--max-time',
    '20',
    '-X',
    'POST',
    '-d',
    body,
    `${url}/v3/kv/range`,
  ]);
  if (run.code !== 0)
    throw new Error(`range read of ${PREFIX} failed (curl exit ${run.code}): ${run.stderr.trim()}`);
  const kvs = (JSON.parse(run.stdout) as { kvs?: { key: string }[] }).kvs ?? [];
  return new Set(kvs.map((kv) => Buffer.from(kv.key, 'base64').toString()));
}

const manifest = (
  size: number,
  version: string,
): string => `apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata:
  name: ${CLUSTER}
  namespace: default
spec:
  size: ${size}
  version: ${version}
`;

let clientUrl = '';
let report: WriterReport | undefined;

beforeAll(async () => {
  to = await sidVersion();
  await localNode().loadBuiltImages(['etcd-sid']);
  await deployOperator(120);
  await kubectlOk(['apply', '-f', '-'], manifest(3, FROM));
  await waitFor(() => settled(3, FROM), {
    what: `${CLUSTER}: 3 Ready members on ${FROM}`,
    timeoutMs: 300_000,
    intervalMs: 1_000,
  });
  const service = await getJson<{ spec?: { clusterIP?: string } }>([
    'service',
    `${CLUSTER}-client`,
  ]);
  clientUrl = `http://${service!.spec!.clusterIP!}:2379`;
  scratch = mkdtempSync(join(tmpdir(), 'konductor-etcd-writer-'));
  writer = localNode()
    .runInNode(process.execPath, [WRITER, clientUrl, PREFIX, join(scratch, 'stop')], 1_800_000)
    .then((run) => {
      if (run.code !== 0) throw new Error(`the writer exited ${run.code}: ${run.stderr.trim()}`);
      return JSON.parse(run.stdout) as WriterReport;
    });
  await waitFor(async () => (await range(clientUrl)).size >= 10, {
    what: 'the writer to have written 10 keys',
    timeoutMs: 30_000,
  });
}, 900_000);

afterAll(async () => {
  if (scratch && !existsSync(join(scratch, 'stop'))) writeFileSync(join(scratch, 'stop'), '');
  await writer?.catch(() => undefined);
  if (scratch && !existsSync(join(scratch, 's3-stop'))) writeFileSync(join(scratch, 's3-stop'), '');
  await s3?.catch(() => undefined);
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  await kubectlOk([
    'delete',
    'etcdrestore,etcdbackup,secret',
    '-l',
    'e2e=lifecycle',
    '--ignore-not-found',
    '--wait=true',
    '--timeout=60s',
  ]);
  // The restore the operator made for itself carries none of the spec's labels.
  await kubectlOk([
    'delete',
    'etcdrestore',
    CLUSTER,
    '--ignore-not-found',
    '--wait=true',
    '--timeout=60s',
  ]);
  await kubectlOk([
    'delete',
    'etcdcluster',
    CLUSTER,
    '--ignore-not-found',
    '--wait=true',
    '--timeout=180s',
  ]);
}, 300_000);

describe('an etcd cluster on a real node, written to through its client Service throughout', () => {
  it('scales 3 → 5 → 3, one member at a time', async () => {
    await step(
      'scale 3 → 5',
      () => kubectlOk(['apply', '-f', '-'], manifest(5, FROM)).then(() => undefined),
      5,
      FROM,
    );
    await step(
      'scale 5 → 3',
      () => kubectlOk(['apply', '-f', '-'], manifest(3, FROM)).then(() => undefined),
      3,
      FROM,
    );
  }, 900_000);

  it('replaces a member whose etcd process is killed', async () => {
    const [victim] = await memberPods();
    await step(
      'member killed → replaced',
      async () => {
        killProcessInPod(victim!.metadata.uid, 'etcd');
        await waitFor(
          async () =>
            !(await memberPods()).some(
              (pod) => pod.metadata.uid === victim!.metadata.uid && pod.status?.phase === 'Running',
            ),
          {
            what: `${victim!.metadata.name} to stop running`,
            timeoutMs: 60_000,
          },
        );
      },
      3,
      FROM,
    );
    expect((await memberPods()).map((pod) => pod.metadata.name)).not.toContain(
      victim!.metadata.name,
    );
  }, 900_000);

  it(`upgrades etcd ${FROM} → Debian sid's 3.5 one member at a time; every member then serves 3.5`, async () => {
    expect(to).toMatch(/^3\.5\./);
    await step(
      `upgrade ${FROM} → ${to}`,
      () => kubectlOk(['apply', '-f', '-'], manifest(3, to)).then(() => undefined),
      3,
      to,
    );
    for (const pod of await memberPods()) {
      const run = await localNode().runInNode('curl', [
        '-sf',
        '--max-time',
        '5',
        `http://${pod.status!.podIP!}:2379/version`,
      ]);
      expect(JSON.parse(run.stdout)).toMatchObject({ etcdserver: to });
    }
    // The cluster version moves to 3.5 once every member runs it.
    await waitFor(
      async () => {
        const run = await localNode().runInNode('curl', [
          '-sf',
          '--max-time',
          '5',
          `${clientUrl}/version`,
        ]);
        return (
          run.code === 0 &&
          (JSON.parse(run.stdout) as { etcdcluster?: string }).etcdcluster?.startsWith('3.5.') ===
            true
        );
      },
      { what: 'the cluster version to become 3.5', timeoutMs: 60_000 },
    );
  }, 900_000);

  it('kept every acknowledged write; writes failed for under 5 s during the upgrade', async () => {
    writeFileSync(join(scratch, 'stop'), '');
    const written = await writer!;
    report = written;
    const stored = await range(clientUrl);
    const missing = written.acked
      .filter((write) => !stored.has(write.key))
      .map((write) => write.key);
    const gaps = steps.map((s) => ({
      step: s.name,
      longestGapMs: longestGapMs(written.acked, s.from, s.to),
    }));
    process.stderr.write(
      `[e2e] etcd writer: ${written.attempts} attempts, ${written.acked.length} acknowledged, ${missing.length} missing, ${written.failures.length} failed\n`,
    );
    for (const gap of gaps)
      process.stderr.write(
        `[e2e] etcd ${gap.step}: longest time without an acknowledged write ${gap.longestGapMs} ms\n`,
      );
    expect(missing).toEqual([]);
    expect(written.acked.length).toBeGreaterThan(100);
    expect(gaps.find((gap) => gap.step.startsWith('upgrade'))!.longestGapMs).toBeLessThan(5_000);
  }, 120_000);

  it('backs up to a Local volume every 10 s from the operator Pod, and restores the newest into a new cluster that has every acknowledged key', async () => {
    expect(report).toBeDefined();
    const oldUid = (await getJson<{ metadata: { uid: string } }>(['etcdcluster', CLUSTER]))!
      .metadata.uid;
    await kubectlOk(
      ['apply', '-f', '-'],
      custom(
        'EtcdBackup',
        `${CLUSTER}-local`,
        `  etcdEndpoints: [http://${CLUSTER}-client:2379]
  storageType: Local
  local:
    path: e2e/${CLUSTER}
  backupPolicy:
    backupIntervalInSecond: 10
    maxBackups: 2
`,
      ),
    );
    const written = await periodicBackups(`${CLUSTER}-local`, 2);
    // Stopped before the restore, so the disaster-recovery step below finds the S3 backups newest.
    await kubectlOk(['delete', 'etcdbackup', `${CLUSTER}-local`, '--wait=true', '--timeout=60s']);
    const newest = written.at(-1)!;
    expect(newest).toMatch(new RegExp(`^e2e/${CLUSTER}_v\\d+_`));
    const started = Date.now();
    await kubectlOk(
      ['apply', '-f', '-'],
      custom(
        'EtcdRestore',
        CLUSTER,
        `  etcdCluster:
    name: ${CLUSTER}
  backupStorageType: Local
  local:
    path: ${newest}
`,
      ),
    );
    await waitFor(
      async () => {
        const cluster = await getJson<{ metadata: { uid: string } }>(['etcdcluster', CLUSTER]);
        return cluster !== undefined && cluster.metadata.uid !== oldUid && (await settled(3, to));
      },
      {
        what: `${CLUSTER} recreated from the newest periodic Local backup with 3 Ready members`,
        timeoutMs: 300_000,
        intervalMs: 1_000,
      },
    );
    process.stderr.write(
      `[e2e] etcd restore from a periodic Local backup (${newest}): 3 Ready members ${((Date.now() - started) / 1000).toFixed(1)} s after the EtcdRestore\n`,
    );
    const service = await getJson<{ spec?: { clusterIP?: string } }>([
      'service',
      `${CLUSTER}-client`,
    ]);
    const stored = await range(`http://${service!.spec!.clusterIP!}:2379`);
    expect(report!.acked.filter((write) => !stored.has(write.key))).toEqual([]);
  }, 420_000);

  it("backs up to S3 every 10 s from the operator Pod, to the suite's S3 stand-in on the node network", async () => {
    s3 = localNode()
      .runInNode(
        process.execPath,
        [
          '--openssl-legacy-provider',
          S3_SERVER,
          NODE_IP,
          '9000',
          'backups',
          join(scratch, 's3-stop'),
        ],
        1_800_000,
      )
      .then((run) => {
        if (run.code !== 0)
          throw new Error(`the S3 stand-in exited ${run.code}: ${run.stderr.trim()}`);
        return JSON.parse(run.stdout) as { keys: string[] };
      });
    await waitFor(
      async () =>
        (
          await localNode().runInNode('curl', [
            '-s',
            '-o',
            '/dev/null',
            '--max-time',
            '2',
            `${S3_ENDPOINT}/`,
          ])
        ).code === 0,
      {
        what: `the S3 stand-in at ${S3_ENDPOINT}`,
        timeoutMs: 30_000,
      },
    );
    await kubectlOk(
      ['apply', '-f', '-'],
      `apiVersion: v1
kind: Secret
metadata:
  name: ${CLUSTER}-aws
  namespace: default
  labels:
    e2e: lifecycle
stringData:
  credentials: |
    [default]
    aws_access_key_id = S3RVER
    aws_secret_access_key = S3RVER
`,
    );
    await kubectlOk(
      ['apply', '-f', '-'],
      custom(
        'EtcdBackup',
        `${CLUSTER}-s3`,
        `  etcdEndpoints: [http://${CLUSTER}-client:2379]
  storageType: S3
  s3:
    path: backups/${CLUSTER}
    awsSecret: ${CLUSTER}-aws
    endpoint: ${S3_ENDPOINT}
    forcePathStyle: true
  backupPolicy:
    backupIntervalInSecond: 10
    maxBackups: 2
`,
      ),
    );
    const written = await periodicBackups(`${CLUSTER}-s3`, 2);
    for (const path of written) expect(path).toMatch(new RegExp(`^backups/${CLUSTER}_v\\d+_`));
  }, 300_000);

  it('restores itself from the newest backup, the periodic S3 one, once a majority of member containers is killed (restorePolicy)', async () => {
    expect(report).toBeDefined();
    await kubectlOk(
      ['apply', '-f', '-'],
      `${manifest(3, to)}  restorePolicy:\n    afterQuorumLostSeconds: 10\n`,
    );
    const oldUid = (await getJson<{ metadata: { uid: string } }>(['etcdcluster', CLUSTER]))!
      .metadata.uid;

    const started = Date.now();
    for (const pod of (await memberPods()).slice(1)) killProcessInPod(pod.metadata.uid, 'etcd');
    await waitFor(
      async () => {
        const cluster = await getJson<{ metadata: { uid: string } }>(['etcdcluster', CLUSTER]);
        return cluster !== undefined && cluster.metadata.uid !== oldUid && (await settled(3, to));
      },
      {
        what: `${CLUSTER} restored by itself with 3 Ready members`,
        timeoutMs: 300_000,
        intervalMs: 1_000,
      },
    );
    process.stderr.write(
      `[e2e] etcd disaster recovery: 3 Ready members ${((Date.now() - started) / 1000).toFixed(1)} s after 2 of 3 members were killed (afterQuorumLostSeconds 10)\n`,
    );

    const service = await getJson<{ spec?: { clusterIP?: string } }>([
      'service',
      `${CLUSTER}-client`,
    ]);
    const stored = await range(`http://${service!.spec!.clusterIP!}:2379`);
    expect(report!.acked.filter((write) => !stored.has(write.key))).toEqual([]);
    const events =
      (
        await getJson<{ items: { reason?: string; message?: string }[] }>([
          'events',
          '--field-selector',
          `involvedObject.name=${CLUSTER}`,
        ])
      )?.items ?? [];
    const recovery = events.find((event) => event.reason === 'DisasterRecovery');
    expect(recovery?.message).toMatch(
      new RegExp(
        `restoring from EtcdBackup ${CLUSTER}-s3, .* at revision (\\d+); writes after revision \\1 are lost`,
      ),
    );
    process.stderr.write(`[e2e] etcd disaster recovery Event: ${recovery!.message}\n`);
    expect(events).toContainEqual(
      expect.objectContaining({
        reason: 'RestoredFromBackup',
        message: expect.stringContaining('by disaster recovery'),
      }),
    );

    await kubectlOk(['delete', 'etcdbackup', `${CLUSTER}-s3`, '--wait=true', '--timeout=60s']);
    writeFileSync(join(scratch, 's3-stop'), '');
    const { keys } = await s3!;
    process.stderr.write(
      `[e2e] S3 stand-in holds ${keys.length} backups (maxBackups 2): ${keys.join(', ')}\n`,
    );
    expect(keys.length).toBeGreaterThanOrEqual(1);
    for (const key of keys) expect(key).toMatch(new RegExp(`^${CLUSTER}_v\\d+_`));
  }, 420_000);
});

/** The paths (status.lastBackupPath) of the first `count` backups a periodic EtcdBackup writes, in order; its first failure throws. */
async function periodicBackups(name: string, count: number): Promise<string[]> {
  const written = new Set<string>();
  await waitFor(
    async () => {
      const status = (
        await getJson<{
          status?: { succeeded?: boolean; lastBackupPath?: string; Reason?: string };
        }>(['etcdbackup', name])
      )?.status;
      if (status?.succeeded === false)
        throw new Error(`EtcdBackup ${name} failed: ${status.Reason}`);
      if (status?.succeeded && status.lastBackupPath) written.add(status.lastBackupPath);
      return written.size >= count;
    },
    {
      what: `${count} backups of the periodic EtcdBackup ${name}`,
      timeoutMs: 120_000,
      intervalMs: 1_000,
    },
  );
  return [...written];
}

function custom(kind: string, name: string, spec: string): string {
  return `apiVersion: etcd.database.coreos.com/v1beta2
kind: ${kind}
metadata:
  name: ${name}
  namespace: default
  labels:
    e2e: lifecycle
spec:
${spec}`;
}
