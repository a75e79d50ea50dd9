// Scenario "takeover": N objects handled by a leader (bench/takeover-child.mjs, its own process, 5 s
// Lease), a standby beside it, cold or warm (--warm-standby: its watches and cache filled while it
// waits). The leader is SIGKILLed; at that moment the object listed last is changed (a change that
// waits through the outage), and another the moment the standby starts leading (a live change).
// Reported: from the kill to the standby leading (the Lease duration plus at most a retry period),
// and from leading to each change's handler. The standby leads at most one retry period (0.5 s) after
// it judged the Lease expired, so "from the Lease expiring to the first handled change" is at most
// the figure plus 0.5 s.
import { ApiClient } from '../src/framework/api/api-client.js';
import {
  benchResource,
  collection,
  createObjects,
  installBenchCrd,
  machine,
  OperatorProcess,
  type BenchTarget,
  type Figures,
} from './support.js';

export interface TakeoverOptions {
  objects: number;
}

/** One takeover: leader, standby (`warm` or `cold`), kill, changes; the figures of that run. */
async function takeover(
  target: BenchTarget,
  objects: number,
  mode: 'warm' | 'cold',
): Promise<Figures> {
  const namespace = `bench-takeover-${mode}`;
  await createObjects(target.kubeConfig, namespace, objects);
  const client = new ApiClient(target.kubeConfig);
  const touch = (name: string) =>
    client.request('PATCH', `${collection(namespace)}/${name}`, {
      body: { spec: { sentAt: Date.now() } },
      contentType: 'application/merge-patch+json',
    });
  const leader = new OperatorProcess(target, 'takeover-child.mjs', [
    namespace,
    'a',
    'cold',
    objects,
  ]);
  let standby: OperatorProcess | undefined;
  try {
    await leader.message('leading', 60_000);
    await leader.message('caughtUp', 600_000);
    standby = new OperatorProcess(target, 'takeover-child.mjs', [namespace, 'b', mode, objects]);
    // A warm standby has listed once its watch opened; a cold one has nothing to wait for.
    if (mode === 'warm') await standby.message('watching', 120_000);
    else await new Promise((resolve) => setTimeout(resolve, 3_000));

    // The change through the outage is to the object listed last (etcd lists by key: o-9999 of 10,000).
    const last = Array.from({ length: objects }, (_, i) => `o-${i}`)
      .sort()
      .at(-1)!;
    const killedAt = Date.now();
    leader.kill();
    await touch(last);
    const leadingAt = (await standby.message('leading', 60_000)).leading as number;
    const liveSentAt = Date.now();
    await touch('o-2');
    const handledAt = async (name: string): Promise<number> =>
      (await standby!.messageWhere((m) => m.handled === name, 120_000)).at as number;
    const waiting = await handledAt(last);
    const live = await handledAt('o-2');
    return {
      scenario: 'takeover',
      standby: mode,
      objects,
      killToLeadingMs: leadingAt - killedAt,
      firstHandledAfterLeadingMs: Math.min(waiting, live) - leadingAt,
      waitingChangeAfterLeadingMs: waiting - leadingAt,
      liveChangeMs: live - liveSentAt,
      resource: benchResource.plural,
      ...machine(),
    };
  } finally {
    leader.kill();
    standby?.kill();
    client.close();
  }
}

/** A cold and a warm takeover at `objects`, each in its own namespace, in one run. */
export async function runTakeover(
  target: BenchTarget,
  options: TakeoverOptions,
): Promise<Figures[]> {
  await installBenchCrd(target.kubeConfig);
  return [
    await takeover(target, options.objects, 'cold'),
    await takeover(target, options.objects, 'warm'),
  ];
}
