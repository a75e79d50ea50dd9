/**
 * An EtcdCluster with `spec.TLS.static` on a real node: members talk TLS to each other and to clients
 * (asking every client for a certificate), the operator Pod reaches them with the operator Secret,
 * a backup from the operator Pod presents it too, and renewed certificates roll the members one at a
 * time while a writer keeps writing over TLS through the client Service.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REPO, deployOperator, getJson, kubectlOk, localNode, waitFor } from '../support/node.js';
import { issueEtcdTLS, TLS_SPEC, tlsSecrets, type EtcdTLS } from '../../support/etcd-tls.js';

const CLUSTER = 'e2e-tls';
const NAMESPACE = 'default';
const PREFIX = 'tls/';
const WRITER = resolve(REPO, 'test/e2e/support/etcd-writer.mjs');
/** The name the client Service carries in the server certificate. */
const SERVICE_NAME = `${CLUSTER}-client.${NAMESPACE}.svc`;

interface MemberPod {
  metadata: { name: string; deletionTimestamp?: string; annotations?: Record<string, string> };
  status?: {
    phase?: string;
    podIP?: string;
    containerStatuses?: { name: string; ready: boolean }[];
  };
}
interface WriterReport {
  attempts: number;
  acked: { key: string; at: number }[];
  failures: { at: number; error: string }[];
}

let scratch = '';
let tls: EtcdTLS;
let serviceIP = '';
let writer: Promise<WriterReport> | undefined;

async function memberPods(): Promise<MemberPod[]> {
  const list = await getJson<{ items: MemberPod[] }>(['pods', '-l', `etcd_cluster=${CLUSTER}`]);
  return (list?.items ?? []).filter((pod) => pod.metadata.deletionTimestamp === undefined);
}

async function readyMembers(): Promise<number> {
  return (await memberPods()).filter((pod) =>
    pod.status?.containerStatuses?.some((c) => c.name === 'etcd' && c.ready),
  ).length;
}

/** curl inside the node against the client Service by its certificate name; `client` false leaves the client certificate out. */
function curl(
  path: string,
  body: string,
  client = true,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const certificate = client
    ? ['--cert', join(scratch, 'client.crt'), '--key', join(scratch, 'client.key')]
    : [];
  return localNode().runInNode('curl', [
    '-sS',
    '--fail',
    '--max-time',
    '10',
    '--cacert',
    join(scratch, 'ca.crt'),
    ...certificate,
    '--resolve',
    `${SERVICE_NAME}:2379:${serviceIP}`,
    '-X',
    'POST',
    '-d',
    body,
    `https://${SERVICE_NAME}:2379${path}`,
  ]);
}

async function keys(): Promise<Set<string>> {
  const b64 = (text: string): string => Buffer.from(text).toString('base64');
  const end = PREFIX.slice(0, -1) + String.fromCharCode(PREFIX.charCodeAt(PREFIX.length - 1) + 1);
  const run = await curl(
    '/v3/kv/range',
    JSON.stringify({ key: b64(PREFIX), range_end: b64(end), keys_only: true }),
  );
  if (run.code !== 0)
    throw new Error(`range read over TLS failed (curl exit ${run.code}): ${run.stderr.trim()}`);
  return new Set(
    ((JSON.parse(run.stdout) as { kvs?: { key: string }[] }).kvs ?? []).map((kv) =>
      Buffer.from(kv.key, 'base64').toString(),
    ),
  );
}

function secretsYaml(certificates: EtcdTLS): string {
  return tlsSecrets(certificates)
    .map(
      ({ name, data }) =>
        `apiVersion: v1\nkind: Secret\nmetadata:\n  name: ${name}\n  namespace: ${NAMESPACE}\n  labels:\n    e2e: tls\ndata:\n${Object.entries(
          data,
        )
          .map(([k, v]) => `  ${k}: ${v}`)
          .join('\n')}\n`,
    )
    .join('---\n');
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'konductor-etcd-tls-'));
  tls = await issueEtcdTLS(NAMESPACE, CLUSTER);
  writeFileSync(join(scratch, 'client.crt'), tls.client.cert);
  writeFileSync(join(scratch, 'client.key'), tls.client.key);
  writeFileSync(join(scratch, 'ca.crt'), tls.ca.cert);
  await deployOperator(120);
  await kubectlOk(['apply', '-f', '-'], secretsYaml(tls));
  const started = Date.now();
  // YAML takes JSON as a flow mapping.
  await kubectlOk(
    ['apply', '-f', '-'],
    `apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata:\n  name: ${CLUSTER}\n  namespace: ${NAMESPACE}\nspec:\n  size: 3\n  TLS: ${JSON.stringify(TLS_SPEC)}\n`,
  );
  await waitFor(
    async () =>
      (await readyMembers()) === 3 &&
      (await getJson<{ status?: { phase?: string } }>(['etcdcluster', CLUSTER]))?.status?.phase ===
        'Running',
    {
      what: `${CLUSTER}: 3 Ready members serving TLS`,
      timeoutMs: 300_000,
      intervalMs: 1_000,
    },
  );
  process.stderr.write(
    `[e2e] etcd TLS cluster: 3 Ready members ${((Date.now() - started) / 1000).toFixed(1)} s after the EtcdCluster\n`,
  );
  serviceIP = (await getJson<{ spec?: { clusterIP?: string } }>(['service', `${CLUSTER}-client`]))!
    .spec!.clusterIP!;
}, 600_000);

afterAll(async () => {
  if (scratch && !existsSync(join(scratch, 'stop'))) writeFileSync(join(scratch, 'stop'), '');
  await writer?.catch(() => undefined);
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  await kubectlOk([
    'delete',
    'etcdbackup',
    '-l',
    'e2e=tls',
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
  await kubectlOk(['delete', 'secret', '-l', 'e2e=tls', '--ignore-not-found']);
}, 300_000);

describe('an etcd cluster with spec.TLS.static on a real node', () => {
  it('advertises https peer and client URLs, serves the holder of the client certificate and refuses a client without one', async () => {
    const list = await curl('/v3/cluster/member/list', '{}');
    expect(list.code).toBe(0);
    const members = (
      JSON.parse(list.stdout) as { members: { peerURLs: string[]; clientURLs: string[] }[] }
    ).members;
    expect(members).toHaveLength(3);
    for (const member of members) {
      expect(member.peerURLs.every((url) => url.startsWith('https://'))).toBe(true);
      expect(member.clientURLs.every((url) => url.startsWith('https://'))).toBe(true);
    }
    const anonymous = await curl(
      '/v3/kv/range',
      JSON.stringify({ key: Buffer.from('x').toString('base64') }),
      false,
    );
    expect(anonymous.code).not.toBe(0);
    const plain = await localNode().runInNode('curl', [
      '-sS',
      '--fail',
      '--max-time',
      '5',
      '-X',
      'POST',
      '-d',
      '{}',
      `http://${serviceIP}:2379/v3/cluster/member/list`,
    ]);
    expect(plain.code).not.toBe(0);
  }, 120_000);

  it('is backed up from the operator Pod with the operator Secret', async () => {
    await kubectlOk(
      ['apply', '-f', '-'],
      `apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdBackup\nmetadata:\n  name: ${CLUSTER}-once\n  namespace: ${NAMESPACE}\n  labels:\n    e2e: tls\nspec:\n  etcdEndpoints: [https://${CLUSTER}-client:2379]\n  storageType: Local\n  local:\n    path: e2e/${CLUSTER}.db\n`,
    );
    await waitFor(
      async () => {
        const status = (
          await getJson<{ status?: { succeeded?: boolean; Reason?: string } }>([
            'etcdbackup',
            `${CLUSTER}-once`,
          ])
        )?.status;
        if (status?.succeeded === false)
          throw new Error(`the backup of the TLS cluster failed: ${status.Reason}`);
        return status?.succeeded === true;
      },
      { what: 'the one-shot backup of the TLS cluster', timeoutMs: 60_000 },
    );
  }, 120_000);

  it('rolls every member onto renewed certificates one at a time (a new member first), never below 3 Ready, while a writer keeps writing over TLS', async () => {
    writer = localNode()
      .runInNode(
        process.execPath,
        [WRITER, `https://${serviceIP}:2379`, PREFIX, join(scratch, 'stop'), scratch, SERVICE_NAME],
        1_800_000,
      )
      .then((run) => {
        if (run.code !== 0) throw new Error(`the writer exited ${run.code}: ${run.stderr.trim()}`);
        return JSON.parse(run.stdout) as WriterReport;
      });
    await waitFor(async () => (await keys()).size >= 10, {
      what: 'the writer to have written 10 keys over TLS',
      timeoutMs: 60_000,
    });
    const before = new Set((await memberPods()).map((pod) => pod.metadata.name));

    const started = Date.now();
    // The same CA, new leaf certificates: clients that trust the CA notice nothing.
    await kubectlOk(
      ['apply', '-f', '-'],
      secretsYaml(await issueEtcdTLS(NAMESPACE, CLUSTER, tls.ca)),
    );
    let fewestReady = Infinity;
    await waitFor(
      async () => {
        const pods = await memberPods();
        const ready = pods.filter((pod) =>
          pod.status?.containerStatuses?.some((c) => c.name === 'etcd' && c.ready),
        ).length;
        fewestReady = Math.min(fewestReady, ready);
        const rolled = pods.length === 3 && pods.every((pod) => !before.has(pod.metadata.name));
        const conditions =
          (
            await getJson<{ status?: { conditions?: { type: string; status: string }[] } }>([
              'etcdcluster',
              CLUSTER,
            ])
          )?.status?.conditions ?? [];
        return (
          rolled &&
          ready === 3 &&
          !conditions.some((c) => c.type === 'Rolling' && c.status === 'True')
        );
      },
      {
        what: 'every member replaced by one on the renewed certificates',
        timeoutMs: 600_000,
        intervalMs: 500,
      },
    );
    const rollSeconds = (Date.now() - started) / 1000;

    writeFileSync(join(scratch, 'stop'), '');
    const written = await writer;
    const stored = await keys();
    const missing = written.acked.filter((write) => !stored.has(write.key));
    let previous = written.acked.find((write) => write.at >= started)?.at ?? started;
    let longest = 0;
    for (const write of written.acked.filter((w) => w.at >= started)) {
      longest = Math.max(longest, write.at - previous);
      previous = write.at;
    }
    process.stderr.write(
      `[e2e] etcd TLS certificate roll: ${rollSeconds.toFixed(1)} s for 3 members; fewest Ready ${fewestReady}; writer ${written.acked.length} acknowledged, ${missing.length} missing; longest gap ${longest} ms\n`,
    );
    expect(missing).toEqual([]);
    expect(fewestReady).toBeGreaterThanOrEqual(3);
    expect(written.acked.length).toBeGreaterThan(50);
  }, 900_000);
});
