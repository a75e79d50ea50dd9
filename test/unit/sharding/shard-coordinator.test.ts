import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NEVER, Subject, type Observable } from 'rxjs';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import { silentLogger } from '../../../src/framework/observability/logger.js';
import { noMetrics } from '../../../src/framework/observability/metrics.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import type { MemberLeases } from '../../../src/framework/sharding/member-leases.js';
import type { RingView } from '../../../src/framework/sharding/ring-membership.js';
import { memberFor, shardKey } from '../../../src/framework/sharding/ring.js';
import {
  ShardCoordinator,
  type ShardCoordinatorOptions,
} from '../../../src/framework/sharding/shard-coordinator.js';
import { ShardLabels } from '../../../src/framework/sharding/shard-labels.js';
import type { WatchEvent } from '../../../src/framework/watching/watch-events.js';
import type { WatchHub } from '../../../src/framework/watching/watch-hub.js';
import { waitFor } from '../../support/wait-for.js';
import { widget, widgetResource } from '../../support/widget-objects.js';

const labels = new ShardLabels('konductor.dev');
const LIST = '/apis/test.konductor.dev/v1/namespaces/default/widgets';

/** One answer of the scripted API server: a status and a body, or a promise of them (held until it settles). */
type Answer = { status: number; body: unknown } | Promise<{ status: number; body: unknown }>;

/**
 * A local API server answering each `METHOD path` from a script, in order, and recording every
 * request (with its query) as it arrives. Requests nothing was scripted for get a 500.
 */
async function scriptedServer(script: Record<string, Answer[]>) {
  const seen: string[] = [];
  const server: Server = createServer((request: IncomingMessage, response) => {
    const url = new URL(request.url ?? '/', 'http://x');
    seen.push(`${request.method} ${url.pathname}${url.search}`);
    request.resume();
    const answer = script[`${request.method} ${url.pathname}`]?.shift() ?? {
      status: 500,
      body: { message: 'not scripted' },
    };
    void Promise.resolve(answer).then(({ status, body }) =>
      response.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body)),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = new ApiClient({
    getCurrentCluster: () => ({ server: url }),
    applyToHTTPSOptions: async () => undefined,
  });
  return {
    seen,
    client,
    close: async () => {
      client.close();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const ok = (body: unknown) => ({ status: 200, body });
const conflict = { status: 409, body: { kind: 'Status', code: 409, reason: 'Conflict' } };
const page = (items: KubeObject[], next?: string) => ok({ items, metadata: { continue: next } });

/** A widget whose member is `member` among each of `rings` (names are tried until the hashes agree). */
function widgetOf(member: string, rings: string[][], labelledFor?: string, resourceVersion = '1') {
  for (let i = 0; ; i++) {
    const name = `w${i}`;
    const key = shardKey(widgetResource, 'default', name);
    if (rings.some((members) => memberFor(key, members) !== member)) continue;
    return widget({
      name,
      uid: `uid-${name}`,
      resourceVersion,
      ...(labelledFor ? { labels: { [labels.shard]: labelledFor } } : {}),
    });
  }
}

function ring(live: string[]): RingView {
  return { live, pending: [], departed: [], successions: new Map() };
}

function coordinator(
  client: ApiClient,
  unassigned: Observable<WatchEvent> = NEVER,
  extra: Partial<ShardCoordinatorOptions> = {},
) {
  const hub = { watch: () => unassigned } as unknown as WatchHub;
  const leases = {
    nameHeirs: async () => undefined,
    remove: async () => true,
  } as unknown as MemberLeases;
  return new ShardCoordinator({
    client,
    hub,
    labels,
    leases,
    logger: silentLogger(),
    metrics: noMetrics,
    collections: () => [{ resource: widgetResource, namespace: 'default' }],
    pageSize: 1,
    ...extra,
  });
}

describe('the shard coordinator', () => {
  let server: Awaited<ReturnType<typeof scriptedServer>> | undefined;
  let running: ShardCoordinator | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
    await server?.close();
    server = undefined;
  });

  test('places an object that changed since it was listed from a fresh read, in the same pass', async () => {
    // Labelled for a, wanted by b: the coordinator asks a to hand it on (a drain).
    const listed = widgetOf('b', [['a', 'b']], 'a', '1');
    const changed = { ...listed, metadata: { ...listed.metadata, resourceVersion: '2' } };
    const path = `${LIST}/${listed.metadata!.name}`;
    server = await scriptedServer({
      [`GET ${LIST}`]: [page([listed])],
      [`PATCH ${path}`]: [conflict, ok(changed)],
      [`GET ${path}`]: [ok(changed)],
    });
    running = coordinator(server.client);
    running.update(ring(['a', 'b']));

    await waitFor(() => server!.seen.length === 4, {
      what: 'the placement written from a fresh read',
    });
    expect(server.seen.map((request) => request.split('?')[0])).toEqual([
      `GET ${LIST}`,
      `PATCH ${path}`,
      `GET ${path}`,
      `PATCH ${path}`,
    ]);
  });

  test('leaves unassigned objects to its watch of them, which assigns each once', async () => {
    const fresh = widgetOf('a', [['a', 'b']]);
    const unassigned = new Subject<WatchEvent>();
    server = await scriptedServer({
      [`GET ${LIST}`]: [page([fresh])],
      [`PATCH ${LIST}/${fresh.metadata!.name}`]: [ok(fresh)],
    });
    running = coordinator(server.client, unassigned);
    running.update(ring(['a', 'b']));
    await waitFor(() => server!.seen.length === 1, { what: 'the listing' });
    unassigned.next({ type: 'ADDED', object: fresh } as WatchEvent);

    await waitFor(() => server!.seen.length === 2, { what: 'the assignment' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.seen.filter((request) => request.startsWith('PATCH'))).toHaveLength(1);
  });

  test('relabels a departed member’s objects only once this replica, one of its heirs, has listed them', async () => {
    const orphan = widgetOf('a', [['a', 'b']], 'c');
    server = await scriptedServer({
      [`GET ${LIST}`]: [page([orphan])],
      [`PATCH ${LIST}/${orphan.metadata!.name}`]: [ok(orphan)],
    });
    let listed!: () => void;
    const waitedFor: string[][] = [];
    const leases = {
      nameHeirs: async () => '2',
      remove: async () => true,
    } as unknown as MemberLeases;
    running = coordinator(server.client, NEVER, {
      leases,
      heirsListed: (successions) => {
        waitedFor.push([...successions.keys()]);
        return new Promise((resolve) => (listed = resolve));
      },
    });
    running.update({ ...ring(['a', 'b']), departed: [{ member: 'c', resourceVersion: '1' }] });
    await waitFor(() => waitedFor.length === 1, { what: 'the pass to wait for the listing' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(server.seen).toEqual([]);
    expect(waitedFor).toEqual([['c']]);

    listed();
    await waitFor(() => server!.seen.some((request) => request.startsWith('PATCH')), {
      what: 'the relabelling',
    });
  });

  test('gives up a listing when the ring changes, and lists again against the new ring', async () => {
    // Its member is a in both rings: nothing to write, only listings.
    const first = widgetOf(
      'a',
      [
        ['a', 'b'],
        ['a', 'b', 'c'],
      ],
      'a',
    );
    let answerFirstPage!: (answer: { status: number; body: unknown }) => void;
    server = await scriptedServer({
      [`GET ${LIST}`]: [
        new Promise((resolve) => (answerFirstPage = resolve)),
        page([first], 'next-page'),
      ],
    });
    running = coordinator(server.client);
    running.update(ring(['a', 'b']));
    await waitFor(() => server!.seen.length === 1, { what: 'the first page asked for' });
    running.update(ring(['a', 'b', 'c']));
    answerFirstPage(page([first], 'next-page'));

    await waitFor(() => server!.seen.length >= 2, { what: 'the listing started again' });
    expect(server.seen[1]).not.toContain('continue=');
  });
});
