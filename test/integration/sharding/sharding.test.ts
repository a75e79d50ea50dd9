import { randomBytes } from 'node:crypto';
import {
  createOperator,
  daemon,
  on,
  type AdmissionContext,
  silentLogger,
  TemporaryError,
  type ChangeContext,
  type DaemonContext,
  type Operator,
  type OperatorOptions,
} from '../../../src/framework/index.js';
import type { HandlerClass } from '../../../src/framework/registry/registry.js';
import { sharedKubeConfig } from '../../support/cluster.js';
import { waitFor } from '../../support/wait-for.js';
import { WIDGET_API_VERSION, type Widget } from '../../support/widgets.js';
import { widgetNamespace } from '../../support/widget-namespace.js';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import { memberFor, shardKey } from '../../../src/framework/sharding/ring.js';
import {
  COORDINATES_SHARDS_ANNOTATION,
  formatMicroTime,
} from '../../../src/framework/runtime/lease-record.js';
import { LogCapture } from '../../support/log-capture.js';
import { widgetResource } from '../../support/widget-objects.js';

const API = WIDGET_API_VERSION;
// Short Lease timings keep the specs quick; renewals come every retry period.
const ELECTION = { leaseDuration: 3, renewDeadline: 2, retryPeriod: 0.5 };
const SHARD = 'konductor.dev/shard';
const HEIRS = 'konductor.dev/heirs';

/** One daemon run of one widget on one replica: when it started and, once it did, stopped. */
interface DaemonRun {
  replica: string;
  widget: string;
  started: number;
  stopped?: number;
}

/** What every replica's handlers did, in one place. */
class Ledger {
  readonly created: string[] = [];
  readonly deleted: string[] = [];
  readonly resumed: string[] = [];
  readonly runs: DaemonRun[] = [];

  /** The handlers of one replica, recording here under its name. */
  handlersOf(replica: string): HandlerClass {
    const { created, deleted, resumed, runs } = this;
    class Work {
      @on.create(API, 'widgets')
      created({ name }: ChangeContext): void {
        created.push(`${replica}/${name}`);
      }
      @on.resume(API, 'widgets')
      resumedOne({ name }: ChangeContext): void {
        resumed.push(`${replica}/${name}`);
      }
      @on.deletion(API, 'widgets')
      deletedOne({ name }: ChangeContext): void {
        deleted.push(`${replica}/${name}`);
      }
      @daemon(API, 'widgets')
      async watchOver({ name, stopped }: DaemonContext): Promise<void> {
        const run: DaemonRun = { replica, widget: name, started: Date.now() };
        runs.push(run);
        await stopped;
        run.stopped = Date.now();
      }
    }
    return Work;
  }

  /** The replica running each widget's daemon now; a widget run by two at once is listed under both. */
  running(): Map<string, string[]> {
    const now = new Map<string, string[]>();
    for (const run of this.runs)
      if (run.stopped === undefined)
        now.set(run.widget, [...(now.get(run.widget) ?? []), run.replica]);
    return now;
  }

  /** Pairs of daemon runs of one widget that overlapped in time (on two replicas). */
  overlaps(): string[] {
    const found: string[] = [];
    const byWidget = new Map<string, DaemonRun[]>();
    for (const run of this.runs)
      byWidget.set(run.widget, [...(byWidget.get(run.widget) ?? []), run]);
    for (const [widget, runs] of byWidget) {
      const sorted = [...runs].sort((a, b) => a.started - b.started);
      for (let i = 1; i < sorted.length; i++) {
        const before = sorted[i - 1]!;
        if (before.stopped === undefined || before.stopped > sorted[i]!.started)
          found.push(`${widget}: ${before.replica} and ${sorted[i]!.replica}`);
      }
    }
    return found;
  }
}

/** The replica a member name belongs to: the name without the suffix of its start. */
function replicaOf(member: string | undefined): string | undefined {
  return member?.replace(/-[a-z0-9]{5}$/, '');
}

describe('sharding across replicas', () => {
  const operators = new Map<string, Operator>();
  let client: ApiClient;
  beforeAll(() => {
    client = new ApiClient(sharedKubeConfig());
  });
  afterAll(() => client.close());
  /** Stops the renewals of each spec's idle coordinator. */
  const idleRings: Array<() => void> = [];
  afterEach(async () => {
    await Promise.all([...operators.values()].map((operator) => operator.stop(2_000)));
    operators.clear();
    for (const stop of idleRings.splice(0)) stop();
  });

  function start(
    namespace: string,
    replica: string,
    ledger: Ledger,
    extra: Partial<OperatorOptions> = {},
  ): Operator {
    const { handlers = [], ...options } = extra;
    const operator = createOperator({
      kubeConfig: sharedKubeConfig(),
      namespaces: [namespace],
      logger: silentLogger(),
      sharding: true,
      leaderElection: { ...ELECTION, namespace, identity: replica },
      ...options,
      handlers: [ledger.handlersOf(replica), ...handlers],
    }).start();
    operators.set(replica, operator);
    return operator;
  }

  async function stopReplica(replica: string): Promise<void> {
    await operators.get(replica)!.stop(5_000);
    operators.delete(replica);
  }

  async function shardLabels(namespace: string): Promise<Map<string, string | undefined>> {
    const list = await client.request<{ items: Widget[] }>(
      'GET',
      `/apis/${API}/namespaces/${namespace}/widgets`,
    );
    return new Map(
      list.items.map((w) => [w.metadata!.name!, replicaOf(w.metadata?.labels?.[SHARD])]),
    );
  }

  async function memberLeases(namespace: string): Promise<string[]> {
    const list = await client.request<{ items: Array<{ metadata: { name: string } }> }>(
      'GET',
      `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
    );
    return list.items
      .map((lease) => lease.metadata.name)
      .filter((name) => name.includes('-shard-'));
  }

  /**
   * Waits until every widget is labelled for the member rendezvous hashing picks among the live
   * members' Leases: the coordinator sees a member that joined only once it has seen it renew, and
   * drains a share to it after.
   */
  async function placedAmongMembers(namespace: string): Promise<void> {
    await waitFor(
      async () => {
        const members = (await memberLeases(namespace)).map((name) =>
          name.slice(name.indexOf('-shard-') + '-shard-'.length),
        );
        const list = await client.request<{ items: Widget[] }>(
          'GET',
          `/apis/${API}/namespaces/${namespace}/widgets`,
        );
        return list.items.every(
          (w) =>
            w.metadata?.labels?.[SHARD] ===
            memberFor(shardKey(widgetResource, namespace, w.metadata!.name!), members),
        );
      },
      { what: 'every widget labelled for its member', timeoutMs: 30_000 },
    );
  }

  /** Waits until every widget's daemon runs on exactly one of `replicas`. */
  async function eachRunOnceOn(ledger: Ledger, widgets: number, replicas: string[]): Promise<void> {
    await waitFor(
      () => {
        const running = ledger.running();
        return (
          running.size === widgets &&
          [...running.values()].every((on) => on.length === 1 && replicas.includes(on[0]!))
        );
      },
      { what: `each widget's daemon to run once, on ${replicas.join(', ')}`, timeoutMs: 40_000 },
    );
  }

  test('shares the widgets among the replicas: each is labelled with and handled by one', async () => {
    const { namespace, widgets } = await widgetNamespace('shards');
    const ledger = new Ledger();
    const replicas = ['replica-a', 'replica-b', 'replica-c'];
    for (const replica of replicas) start(namespace, replica, ledger);
    await waitFor(() => [...operators.values()].every((operator) => operator.active), {
      what: 'every replica to join the ring',
      timeoutMs: 20_000,
    });
    await widgets.createMany('w', 30);
    await placedAmongMembers(namespace);
    await eachRunOnceOn(ledger, 30, replicas);
    await waitFor(() => ledger.created.length >= 30, { what: '30 creations handled' });

    const labels = await shardLabels(namespace);
    const running = ledger.running();
    expect(ledger.created).toHaveLength(30);
    // A widget created before the coordinator saw a member renew moved to it after: its daemon did.
    for (const [widget, member] of labels) expect(running.get(widget)).toEqual([member]);
    for (const replica of replicas)
      expect([...labels.values()].filter((member) => member === replica).length).toBeGreaterThan(0);
    expect(ledger.overlaps()).toEqual([]);
  });

  test('runs a deleted widget’s delete handler on its member, once', async () => {
    const { namespace, widgets } = await widgetNamespace('shard-delete');
    const ledger = new Ledger();
    for (const replica of ['replica-a', 'replica-b']) start(namespace, replica, ledger);
    await widgets.createMany('w', 6);
    await eachRunOnceOn(ledger, 6, ['replica-a', 'replica-b']);
    const member = (await shardLabels(namespace)).get('w-0');

    await widgets.delete('w-0');
    await waitFor(() => ledger.deleted.length > 0, { what: 'the delete handler to run' });
    await waitFor(() => !ledger.running().has('w-0'), { what: 'the daemon of w-0 to stop' });
    expect(ledger.deleted).toEqual([`${member}/w-0`]);
  });

  test('hands a stopped replica’s widgets to the others, its daemons stopped first', async () => {
    const { namespace, widgets } = await widgetNamespace('shard-leave');
    const ledger = new Ledger();
    for (const replica of ['replica-a', 'replica-b', 'replica-c'])
      start(namespace, replica, ledger);
    await widgets.createMany('w', 30);
    await eachRunOnceOn(ledger, 30, ['replica-a', 'replica-b', 'replica-c']);

    await stopReplica('replica-c');
    await eachRunOnceOn(ledger, 30, ['replica-a', 'replica-b']);
    // Its heirs handle its widgets first; the coordinator relabels them after.
    await waitFor(
      async () => [...(await shardLabels(namespace)).values()].every((m) => m !== 'replica-c'),
      { what: 'every widget of replica-c relabelled' },
    );
    expect(ledger.overlaps()).toEqual([]);
    // Moving is no change: no create handler runs again.
    expect(ledger.created).toHaveLength(30);
  });

  test('removes a departed member’s Lease once each of its widgets is labelled for its heir', async () => {
    const { namespace, widgets } = await widgetNamespace('shard-heirs');
    const ledger = new Ledger();
    for (const replica of ['replica-a', 'replica-b']) start(namespace, replica, ledger);
    await widgets.createMany('w', 10);
    await eachRunOnceOn(ledger, 10, ['replica-a', 'replica-b']);
    const before = await memberLeases(namespace);
    expect(before.filter((name) => name.includes('replica-b'))).toHaveLength(1);

    await stopReplica('replica-b');
    await eachRunOnceOn(ledger, 10, ['replica-a']);
    await waitFor(
      async () => (await memberLeases(namespace)).every((name) => !name.includes('replica-b')),
      { what: 'the departed member’s Lease to go', timeoutMs: 30_000 },
    );
    expect([...(await shardLabels(namespace)).values()].every((r) => r === 'replica-a')).toBe(true);
    expect(ledger.overlaps()).toEqual([]);
  });

  test('retries a failing handler on a replica that has been an heir', async () => {
    const { namespace, widgets } = await widgetNamespace('shard-heir-retry');
    const ledger = new Ledger();
    let attempts = 0;
    class Flaky {
      @on.create(API, 'widgets', { id: 'flaky' })
      flaky({ name }: ChangeContext): void {
        if (name !== 'flaky') return;
        attempts++;
        if (attempts === 1) throw new TemporaryError('fails once', { delay: 1 });
      }
    }
    start(namespace, 'replica-a', ledger, { handlers: [Flaky] });
    start(namespace, 'replica-b', ledger);
    await widgets.createMany('w', 6);
    await eachRunOnceOn(ledger, 6, ['replica-a', 'replica-b']);
    await stopReplica('replica-b');
    await eachRunOnceOn(ledger, 6, ['replica-a']);

    await widgets.create('flaky');
    await waitFor(() => attempts >= 2, {
      what: 'the retry of the failed handler',
      timeoutMs: 20_000,
    });
  });

  /**
   * A ring whose leader Lease another holder keeps renewing, so no replica coordinates (nothing is
   * relabelled behind the spec's back), and Leases written as the coordinator writes them.
   */
  async function idleCoordinator(namespace: string) {
    const leases = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
    const lease = (name: string, holder: string, annotations: Record<string, string> = {}) => ({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name, annotations },
      spec: {
        holderIdentity: holder,
        leaseDurationSeconds: 3600,
        renewTime: formatMicroTime(Date.now()),
      },
    });
    const merge = { contentType: 'application/merge-patch+json' };
    await client.request('POST', leases, {
      body: lease('widgets-leader', 'elsewhere', { [COORDINATES_SHARDS_ANNOTATION]: 'elsewhere' }),
    });
    const renewing = setInterval(() => {
      void client
        .request('PATCH', `${leases}/widgets-leader`, {
          body: { spec: { renewTime: formatMicroTime(Date.now()) } },
          ...merge,
        })
        .catch(() => undefined);
    }, 500);
    idleRings.push(() => clearInterval(renewing));
    return {
      /** Starts a replica of this ring; resolves with its member name once it holds its Lease. */
      join: async (replica: string, ledger: Ledger): Promise<string> => {
        start(namespace, replica, ledger, {
          leaderElection: { ...ELECTION, namespace, identity: replica, name: 'widgets-leader' },
        });
        await waitFor(() => operators.get(replica)!.active, { what: `${replica} to join` });
        const name = (await memberLeases(namespace)).find((n) => n.includes(replica))!;
        return name.slice('widgets-shard-'.length);
      },
      /** A departed member's Lease naming its heirs. */
      depart: (member: string, heirs: string[]) =>
        client.request('POST', leases, {
          body: lease(`widgets-shard-${member}`, member, { [HEIRS]: heirs.join(',') }),
        }),
      /** New heirs for a departed member, as the coordinator writes them when an heir dies. */
      renameHeirs: (member: string, heirs: string[]) =>
        client.request('PATCH', `${leases}/widgets-shard-${member}`, {
          body: { metadata: { annotations: { [HEIRS]: heirs.join(',') } } },
          ...merge,
        }),
      /** Ends a succession, as the coordinator does once every object is relabelled. */
      endSuccession: (member: string) =>
        client.request('DELETE', `${leases}/widgets-shard-${member}`),
    };
  }

  /** An idle ring (see {@link idleCoordinator}) with `replica-a` in it: the heir of the specs below. */
  async function heirAlone(prefix: string) {
    const { namespace, widgets } = await widgetNamespace(prefix);
    const ring = await idleCoordinator(namespace);
    const ledger = new Ledger();
    const member = await ring.join('replica-a', ledger);
    return { namespace, widgets, ring, ledger, member };
  }

  test('runs the rest of a departed member’s widgets at once when the other heir named for them is dropped', async () => {
    const {
      namespace,
      widgets,
      ring,
      ledger,
      member: memberA,
    } = await heirAlone('shard-heir-dropped');
    const heirs = [memberA, 'dropped-heir'];
    const names = Array.from({ length: 12 }, (_, i) => `w-${i}`);
    const partOf = (heir: string) =>
      names.filter((name) => memberFor(shardKey(widgetResource, namespace, name), heirs) === heir);
    for (const name of names) await widgets.createLabelled(name, { [SHARD]: 'departed' });
    await ring.depart('departed', heirs);
    await waitFor(() => ledger.created.length === partOf(memberA).length, {
      what: 'replica-a to handle its part of the departed member’s widgets',
    });

    await ring.renameHeirs('departed', [memberA]);
    await waitFor(() => ledger.created.length === names.length, {
      what: 'replica-a to handle the dropped heir’s part too',
    });
    expect(partOf('dropped-heir').length).toBeGreaterThan(0);
    expect([...ledger.created].sort()).toEqual(names.map((n) => `replica-a/${n}`).sort());
  });

  test('stops the daemon of a widget still labelled for a departed member once its Lease goes: the coordinator assigns it next', async () => {
    const { widgets, ring, ledger, member } = await heirAlone('shard-straggler');
    await widgets.createLabelled('straggler', { [SHARD]: 'departed' });
    await ring.depart('departed', [member]);
    await waitFor(() => ledger.running().get('straggler')?.[0] === 'replica-a', {
      what: 'replica-a to run the straggler’s daemon as its heir',
    });

    await ring.endSuccession('departed');
    await waitFor(() => !ledger.running().has('straggler'), {
      what: 'the straggler’s daemon to stop',
    });
  });

  test('drains a share of the widgets to a replica that joins, never running one twice', async () => {
    const { namespace, widgets } = await widgetNamespace('shard-join');
    const ledger = new Ledger();
    start(namespace, 'replica-a', ledger);
    start(namespace, 'replica-b', ledger);
    await widgets.createMany('w', 30);
    await eachRunOnceOn(ledger, 30, ['replica-a', 'replica-b']);

    start(namespace, 'replica-c', ledger);
    await waitFor(
      () => [...ledger.running().values()].filter((on) => on.includes('replica-c')).length > 0,
      { what: 'the new replica to take widgets over', timeoutMs: 30_000 },
    );
    // Every widget ends where rendezvous hashing over the three members puts it (drains done).
    await placedAmongMembers(namespace);
    await eachRunOnceOn(ledger, 30, ['replica-a', 'replica-b', 'replica-c']);
    const labels = await shardLabels(namespace);
    expect([...labels.values()].filter((member) => member === 'replica-c').length).toBeGreaterThan(
      0,
    );
    expect(ledger.overlaps()).toEqual([]);
    expect(ledger.created).toHaveLength(30);
  });

  test('runs the resume handlers of the widgets drained to a replica that joins, there', async () => {
    const { namespace, widgets } = await widgetNamespace('shard-resume');
    const ledger = new Ledger();
    start(namespace, 'replica-a', ledger);
    await widgets.createMany('w', 12);
    await eachRunOnceOn(ledger, 12, ['replica-a']);

    start(namespace, 'replica-b', ledger);
    await waitFor(async () => (await memberLeases(namespace)).length === 2, {
      what: 'replica-b to join',
      timeoutMs: 10_000,
    });
    await placedAmongMembers(namespace);
    const moved = [...(await shardLabels(namespace))]
      .filter(([, member]) => member === 'replica-b')
      .map(([name]) => `replica-b/${name}`);
    expect(moved.length).toBeGreaterThan(0);
    await waitFor(() => moved.every((run) => ledger.resumed.includes(run)), {
      what: 'the moved widgets’ resume handlers to run on replica-b',
      timeoutMs: 10_000,
    });
    expect(ledger.resumed.filter((run) => run.startsWith('replica-a/'))).toEqual([]);
  });

  /** The replica holding the default leader Lease of `namespace` (the coordinator, with sharding on). */
  async function leaderOf(namespace: string): Promise<string | undefined> {
    const lease = await client.request<{ spec?: { holderIdentity?: string } }>(
      'GET',
      `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/konductor-leader`,
    );
    return lease.spec?.holderIdentity || undefined;
  }

  test('a replica with sharding on handles nothing while one without it leads, then takes every widget over', async () => {
    const { namespace, widgets } = await widgetNamespace('shard-switch-on');
    const ledger = new Ledger();
    start(namespace, 'plain', ledger, { sharding: false });
    await widgets.createMany('w', 6);
    await eachRunOnceOn(ledger, 6, ['plain']);
    const logs = new LogCapture();
    const sharded = start(namespace, 'sharded', ledger, {
      logger: logs.logger,
      health: { port: 0, host: '127.0.0.1' },
    });
    await waitFor(() => logs.containing('plain leads without sharding').length > 0, {
      what: 'the sharded replica to wait for the leader without sharding',
    });
    expect(sharded.active).toBe(false);
    // Standing by: ready, so a rollout switching sharding on goes on and stops the old replicas.
    const port = await sharded.serveHealth();
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);

    await stopReplica('plain');
    await eachRunOnceOn(ledger, 6, ['sharded']);
    expect(ledger.overlaps()).toEqual([]);
  });

  test('a replica without sharding leads but handles nothing while a sharded replica renews its member Lease', async () => {
    const { namespace, widgets } = await widgetNamespace('shard-switch-off');
    await widgets.createMany('w', 6);
    // A sharded replica still working, as seen through its member Lease (a rollout switching sharding off).
    const leases = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
    const renewal = () => ({ holderIdentity: 'sharded', renewTime: formatMicroTime(Date.now()) });
    await client.request('POST', leases, {
      body: { metadata: { name: 'konductor-shard-sharded-abcde' }, spec: renewal() },
    });
    const renew = (spec: object) =>
      client.request('PATCH', `${leases}/konductor-shard-sharded-abcde`, {
        body: { spec },
        contentType: 'application/merge-patch+json',
      });
    const renewing = setInterval(() => void renew(renewal()).catch(() => undefined), 500);
    idleRings.push(() => clearInterval(renewing));
    const ledger = new Ledger();
    const logs = new LogCapture();
    const plain = start(namespace, 'plain', ledger, {
      sharding: false,
      logger: logs.logger,
      health: { port: 0, host: '127.0.0.1' },
    });
    await waitFor(
      () => logs.containing('replica(s) with sharding on hold member Leases').length > 0,
      { what: 'the leader without sharding to wait for the sharded replica' },
    );
    expect(await leaderOf(namespace)).toBe('plain');
    expect(plain.active).toBe(false);
    // Standing by: ready, so a rollout switching sharding off goes on and stops the old replicas.
    const port = await plain.serveHealth();
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);

    clearInterval(renewing);
    await renew({ holderIdentity: '' });
    await eachRunOnceOn(ledger, 6, ['plain']);
  });

  test('labels new objects at creation through its mutating webhook, where it serves webhooks', async () => {
    const { namespace, widgets } = await widgetNamespace('shard-webhook');
    const identity = `shard-${randomBytes(4).toString('hex')}.konductor.dev`;
    class Admission {
      @on.validate(API, 'widgets', { id: 'any' })
      any(_context: AdmissionContext): void {}
    }
    const ledger = new Ledger();
    const operator = start(namespace, 'replica-a', ledger, {
      identity,
      handlers: [new Admission()],
      webhooks: { port: 0, url: 'https://127.0.0.1' },
    });
    try {
      await waitFor(() => operator.active, { what: 'the replica to join the ring' });
      let i = 0;
      // The API server calls a new configuration shortly after it is written; the ring is read meanwhile.
      await waitFor(
        async () =>
          replicaOf(
            (await widgets.create(`probe-${i++}`)).metadata?.labels?.[`${identity}/shard`],
          ) === 'replica-a',
        { what: 'a widget labelled at its creation', timeoutMs: 30_000 },
      );
      const created = await widgets.create('w');
      expect(created.metadata?.labels?.[`${identity}/shard`]).toMatch(/^replica-a-[a-z0-9]{5}$/);
      await waitFor(() => ledger.created.includes('replica-a/w'), { what: 'w to be handled' });
    } finally {
      await operator.stop(2_000);
      operators.delete('replica-a');
      for (const plural of ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations'])
        await client.resource('admissionregistration.k8s.io/v1', plural).delete({ name: identity });
    }
  });
});
