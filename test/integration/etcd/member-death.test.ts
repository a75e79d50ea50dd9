import {
  installEtcdCrds,
  createCluster,
  memberList,
  memberPods,
  settledAt,
  startEtcdOperator,
  type EtcdHarness,
  type EtcdHarnessOptions,
} from '../../support/etcd.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { waitFor } from '../../support/wait-for.js';

// Real etcd 3.4 needs seconds per membership change; these specs get minutes.
const MINUTES = 240_000;
/** The operator's own settled look interval: a dead member would wait up to this long if its Pod did not wake the cluster. */
const SETTLED_LOOK_MS = 8_000;

/**
 * Kills one member's etcd process and measures, from the moment its Pod shows it (Failed, or gone),
 * how long until the operator removed the dead member from etcd: its first reaction.
 */
async function killAndMeasure(
  h: EtcdHarness,
  name: string,
): Promise<{ victim: string; reactionMs: number }> {
  await createCluster(h, name, { size: 3 });
  await settledAt(h, name, 3);
  const victim = (await memberList(h, name))[0]!.name;
  expect(h.runner.kill(h.namespace, victim)).toBe(true);

  await waitFor(
    async () =>
      (await memberPods(h, name)).every(
        (p) => p.metadata.name !== victim || p.status?.phase === 'Failed',
      ),
    {
      what: `${victim}'s Pod to show the member died`,
      timeoutMs: 30_000,
      intervalMs: 20,
    },
  );
  const podEvent = Date.now();
  await waitFor(
    async () =>
      !(await memberList(h, name).catch(() => [{ name: victim, clientURLs: [] }])).some(
        (m) => m.name === victim,
      ),
    {
      what: `${victim} to be removed from the member list`,
      timeoutMs: 60_000,
      intervalMs: 20,
    },
  );
  return { victim, reactionMs: Date.now() - podEvent };
}

function describeWith(
  title: string,
  clusters: NonNullable<EtcdHarnessOptions['clusters']>,
  body: (harness: () => EtcdHarness) => void,
): void {
  describe(title, () => {
    let h: EtcdHarness;
    beforeAll(async () => {
      const kc = sharedKubeConfig();
      await installEtcdCrds(kc);
      h = await startEtcdOperator(kc, await uniqueNamespace(kc, 'etcd-death'), { clusters });
    }, 60_000);
    afterAll(async () => {
      await h?.stop();
    });
    body(() => h);
  });
}

describeWith(
  "a member Pod dying, with the operator's own 8 s look",
  { intervalMs: SETTLED_LOOK_MS },
  (harness) => {
    test(
      'wakes the cluster at once: the dead member is removed and replaced, and the cluster is back to 3 healthy members',
      async () => {
        const h = harness();
        const { victim, reactionMs } = await killAndMeasure(h, 'woken');
        console.log(
          `etcd member death → member removed: ${reactionMs} ms (the owned Pod wakes the reconcile; settled look ${SETTLED_LOOK_MS} ms)`,
        );

        await settledAt(h, 'woken', 3);
        expect((await memberList(h, 'woken')).map((m) => m.name)).not.toContain(victim);
      },
      MINUTES,
    );
  },
);
