import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  RbacAuthorizationV1Api,
  type V1RoleBinding,
} from '@kubernetes/client-node';
import { TestControlPlane, waitFor } from '../../../src/testing/index.js';
import { checkLedger, readLedger } from '../../support/chaos/ledger.js';
import {
  ChaosRandom,
  LedgerOperator,
  LedgerWorkload,
} from '../../support/chaos/operator-process.js';
import { chaosStorage, scenarioName } from '../../support/chaos/storage.js';
import { recordChaos } from '../../support/chaos/summary.js';
import { statusOf } from '../../support/cluster.js';
import { installWidgetCrd, widgetResource, Widgets } from '../../support/widgets.js';

const NAMESPACE = 'chaos-rbac';
const ACCOUNT = 'ledger-operator';
const REVOKED_MS = 30_000;
const CRD = `${widgetResource.plural}.${widgetResource.group}`;

// Deleting the widgets CRD would break every other test file on the shared control plane: own one.
let plane: TestControlPlane;
let scratch: string;
let operator: LedgerOperator | undefined;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'konductor-chaos-rbac-'));
  plane = await TestControlPlane.start();
}, 60_000);

afterAll(async () => {
  await operator?.kill();
  await plane?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** Everything LedgerWidgets needs in its namespace: its widgets, their status, and Events. */
const binding: V1RoleBinding = {
  metadata: { name: ACCOUNT, namespace: NAMESPACE },
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: ACCOUNT },
  subjects: [{ kind: 'ServiceAccount', name: ACCOUNT, namespace: NAMESPACE }],
};

describe('permissions and the CRD taken away from a running operator', () => {
  test(`RBAC revoked for ${REVOKED_MS / 1000} s, then the CRD deleted and recreated: the operator survives both, handles the changes made meanwhile once it may, and objects of the recreated CRD`, async () => {
    const random = new ChaosRandom();
    const context = `(seed ${random.seed}; replay with CHAOS_SEED=${random.seed})`;
    const kc = plane.kubeConfig();
    await installWidgetCrd(kc);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NAMESPACE } } });
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createClusterRole({
      body: {
        metadata: { name: ACCOUNT },
        rules: [
          {
            apiGroups: [widgetResource.group],
            resources: [widgetResource.plural],
            verbs: ['get', 'list', 'watch', 'patch'],
          },
          {
            apiGroups: [widgetResource.group],
            resources: [`${widgetResource.plural}/status`],
            verbs: ['patch'],
          },
          { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
        ],
      },
    });
    await rbac.createNamespacedRoleBinding({ namespace: NAMESPACE, body: binding });
    const asOperator = await plane.kubeConfigForServiceAccount({
      namespace: NAMESPACE,
      name: ACCOUNT,
    });
    const kubeconfig = join(scratch, 'operator.kubeconfig');
    writeFileSync(kubeconfig, asOperator.exportConfig());
    const ledger = join(scratch, 'ledger.jsonl');
    operator = new LedgerOperator({
      kubeconfig,
      namespace: NAMESPACE,
      ledger,
      handlerMs: 50,
    }).start();
    await operator.waitReady(60_000);

    const workload = new LedgerWorkload(ledger, random);
    const { expected } = workload;
    const widgets = new Widgets(kc, NAMESPACE);
    const settled = async (): Promise<boolean> =>
      (await workload.unsettled(kc, NAMESPACE)).length === 0;
    for (let i = 0; i < 6; i++) await workload.create(widgets);
    await waitFor(settled, {
      what: `the first objects to be handled ${context}`,
      timeoutMs: 30_000,
      intervalMs: 200,
    });

    // 1. The RoleBinding is deleted; changes are made while the operator may not read or write widgets.
    await rbac.deleteNamespacedRoleBinding({ namespace: NAMESPACE, name: ACCOUNT });
    const revokedAt = Date.now();
    // The authorizer learns of the deletion through its own watch: changes start once the account is denied.
    const probe = new Widgets(asOperator, NAMESPACE);
    await waitFor(
      async () =>
        statusOf(
          await probe.patchSpec(expected.keys().next().value!, {}).then(
            () => 200,
            (e: unknown) => e,
          ),
        ) === 403,
      {
        what: 'the ServiceAccount to be denied',
        intervalMs: 50,
      },
    );
    const deletion = workload.pick(workload.handled(), 1);
    const resizes = workload.pick(
      workload.live().filter((name) => !deletion.includes(name)),
      3,
    );
    for (let i = 0; i < 3; i++) await workload.create(widgets);
    for (const name of resizes) await workload.resize(widgets, name);
    for (const name of deletion) await workload.remove(widgets, name);
    const changesWhileRevoked = 3 + resizes.length + deletion.length;
    const handledBeforeRestore = async (): Promise<string[]> => {
      const pending = await workload.unsettled(kc, NAMESPACE);
      return [...expected.keys()].filter((name) => !pending.includes(name));
    };
    // Health as a probe would see it meanwhile (reported, not asserted: /healthz only fails after a 3-minute silent watch).
    const probes = new Map<string, number>();
    while (Date.now() - revokedAt < REVOKED_MS) {
      await sleep(1_000);
      expect(operator.alive).toBe(true);
      for (const path of ['/healthz', '/readyz'] as const) {
        const key = `${path} ${await operator.health(path)}`;
        probes.set(key, (probes.get(key) ?? 0) + 1);
      }
    }
    const settledWhileRevoked =
      (await handledBeforeRestore()).length - (expected.size - changesWhileRevoked);
    await rbac.createNamespacedRoleBinding({ namespace: NAMESPACE, body: binding });
    const restoredAt = Date.now();
    await waitFor(settled, {
      what: `the changes made while revoked to be handled after the restore ${context}`,
      timeoutMs: 60_000,
      intervalMs: 250,
    });
    const rbacResumeMs = Date.now() - restoredAt;
    const denied = operator
      .logs()
      .filter(
        (l) =>
          JSON.stringify(l).includes('403') ||
          JSON.stringify(l).toLowerCase().includes('forbidden'),
      ).length;

    // 2. The CRD is deleted: the API server deletes every widget, and each waits for our finalizer,
    // so the CRD is gone only once the operator has run the delete handlers.
    const crds = kc.makeApiClient(ApiextensionsV1Api);
    const doomed = workload.live();
    await crds.deleteCustomResourceDefinition({ name: CRD });
    const crdDeletedAt = Date.now();
    await waitFor(
      async () =>
        (await crds
          .readCustomResourceDefinition({ name: CRD })
          .catch((e: unknown) => (statusOf(e) === 404 ? undefined : e))) === undefined,
      {
        what: `the CRD to be gone (its widgets released by the delete handlers) ${context}`,
        timeoutMs: 40_000,
        intervalMs: 250,
      },
    );
    const crdGoneMs = Date.now() - crdDeletedAt;
    for (const name of doomed) expected.get(name)!.deleted = true;
    await sleep(1_000);
    expect(operator.alive).toBe(true);

    // 3. The CRD comes back: new objects are handled by the same process.
    await installWidgetCrd(kc);
    const recreatedAt = Date.now();
    for (let i = 0; i < 3; i++) await workload.create(widgets);
    await waitFor(settled, {
      what: `objects of the recreated CRD to be handled ${context}`,
      timeoutMs: 45_000,
      intervalMs: 250,
    });
    const crdResumeMs = Date.now() - recreatedAt;
    expect(operator.alive).toBe(true);
    expect(await operator.stop()).toBe(0);

    const entries = readLedger(ledger);
    const verdict = checkLedger(entries, [...expected.values()]);
    recordChaos({
      scenario: scenarioName('rbac-and-crd', chaosStorage()),
      faults: 2,
      changesMade: verdict.changesMade,
      changesHandled: verdict.changesHandled,
      lost: verdict.lost.length,
      duplicates: verdict.duplicates,
    });
    console.log(
      `rbac-and-crd: RBAC revoked ${restoredAt - revokedAt} ms (${changesWhileRevoked} changes meanwhile, ${settledWhileRevoked} settled before the restore, ` +
        `${denied} log lines about 403, probes ${JSON.stringify(Object.fromEntries(probes))}), all handled ${rbacResumeMs} ms after the restore; CRD deletion released ${doomed.length} widgets in ${crdGoneMs} ms; ` +
        `objects of the recreated CRD handled within ${crdResumeMs} ms; ${verdict.changesMade} changes, ${entries.filter((e) => e.at === 'done').length} completed runs, ` +
        `duplicates ${verdict.duplicates} ${context}`,
    );

    expect(verdict.lost).toEqual([]);
    expect(verdict.phantom).toEqual([]);
    expect(verdict.changesHandled).toBe(verdict.changesMade);
    // One process throughout: neither the 403s nor the missing CRD made it exit.
    expect(new Set(entries.map((e) => e.pid))).toEqual(new Set([operator.pid]));
    // Nothing could be recorded without permissions: no change made while revoked was settled before the restore.
    expect(settledWhileRevoked).toBe(0);
  }, 180_000);
});
