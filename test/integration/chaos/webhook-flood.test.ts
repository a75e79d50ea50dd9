import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from '../../../src/framework/index.js';
import { waitFor } from '../../../src/testing/index.js';
import { AdmissionOperator } from '../../support/chaos/admission-operator.js';
import { floodWebhook, type FloodCounts } from '../../support/chaos/webhook-flood.js';
import {
  sharedKubeConfig,
  sharedWebhookClientCA,
  statusOf,
  uniqueNamespace,
} from '../../support/cluster.js';
import { installWidgetCrd, Widgets } from '../../support/widgets.js';

/**
 * Anyone on the Pod network floods the webhook port while a tenant creates objects through the API
 * server: bodies that expand in `JSON.parse` (`[{},{},…]`, an AdmissionReview with millions of empty
 * endpoints) and connections that hold 8 MiB each. The operator runs as deployed (192 MB heap cap)
 * with a validating webhook of failurePolicy Fail, so a dead or saturated webhook refuses the
 * tenant's creates. The flood comes from 127.0.0.2; the API server calls from 127.0.0.1.
 */

const FLOOD_MS = 20_000;
const CREATE_EVERY_MS = 250;
const ATTACKER = '127.0.0.2';

let kc: KubeConfig;
let api: ApiClient;
const identities: string[] = [];
let operator: AdmissionOperator | undefined;

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installWidgetCrd(kc);
  api = new ApiClient(kc);
});

afterEach(async () => {
  await operator?.stop();
  operator = undefined;
});

afterAll(async () => {
  for (const name of identities)
    await api
      .resource('admissionregistration.k8s.io/v1', 'validatingwebhookconfigurations')
      .delete({ name });
  api.close();
});

interface Outcome {
  creates: number;
  refused: string[];
  flood: FloodCounts;
}

/** Creates a widget every {@link CREATE_EVERY_MS} while the port is flooded for {@link FLOOD_MS}. */
async function createWhileFlooded(widgets: Widgets, port: number, path: string): Promise<Outcome> {
  const stop = new AbortController();
  const flooding = floodWebhook({ port, path, localAddress: ATTACKER }, stop.signal);
  const refused: string[] = [];
  let creates = 0;
  const until = Date.now() + FLOOD_MS;
  while (Date.now() < until) {
    const started = Date.now();
    const name = `w-${creates++}`;
    await widgets
      .create(name, { size: 1 })
      .catch((error: unknown) =>
        refused.push(
          `${name}: ${statusOf(error)} ${String((error as { body?: unknown }).body ?? error)}`,
        ),
      );
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, CREATE_EVERY_MS - (Date.now() - started))),
    );
  }
  stop.abort();
  return { creates, refused, flood: await flooding };
}

describe.each([
  ['accepting any caller (bounded bodies, per-address shares, a body deadline)', false],
  ['accepting only the API server’s client certificate', true],
])('the webhook port flooded from the Pod network, %s', (_, authenticated) => {
  test('the operator stays up under its heap cap and every honest create is admitted', async () => {
    const namespace = await uniqueNamespace(kc, 'chaos-flood');
    const identity = `flood-${randomBytes(4).toString('hex')}.konductor.dev`;
    identities.push(identity);
    const clientCA = authenticated ? sharedWebhookClientCA() : undefined;
    operator = new AdmissionOperator({
      kubeconfig: process.env.KONDUCTOR_TEST_KUBECONFIG!,
      namespace,
      identity,
      clientCA,
    }).start();
    const port = await operator.webhookPort();
    const widgets = new Widgets(kc, namespace);
    await waitFor(
      async () => (await widgets.create('probe', { size: 10 }).then(() => 0, statusOf)) === 422,
      { what: 'the API server to call the new webhook' },
    );

    const before = operator.memory;
    const outcome = await createWhileFlooded(widgets, port, '/validate/size');

    const memory = operator.memory;
    console.log(
      `webhook flood (${authenticated ? 'client CA' : 'any caller'}): ${outcome.creates} creates, ${outcome.refused.length} refused; flood ${JSON.stringify(outcome.flood)}; ` +
        `operator peak heap ${before.heapUsedMb} MB before the flood, ${memory.heapUsedMb} MB during it; peak RSS ${before.rssMb} → ${memory.rssMb} MB; exit ${String(operator.exit)}` +
        (outcome.refused.length > 0 ? `; first refusal: ${outcome.refused[0]}` : ''),
    );
    expect({ alive: operator.alive, exit: operator.exit }).toEqual({
      alive: true,
      exit: undefined,
    });
    expect(outcome.refused).toEqual([]);
    expect(outcome.creates).toBeGreaterThan(FLOOD_MS / CREATE_EVERY_MS / 2);
    // The flood was served and refused, not ignored: every kind got answers.
    const answered = (counts: Record<string, number>): number =>
      Object.entries(counts)
        .filter(([outcome]) => /^\d{3}$/.test(outcome))
        .reduce((sum, [, n]) => sum + n, 0);
    // With a client CA the server refuses (403) before reading a body and closes the connection, so
    // a sender still writing its 8 MiB mostly sees the close, not the 403: either way it was not held.
    const stalledEnded =
      answered(outcome.flood.stalled) + (authenticated ? (outcome.flood.stalled.closed ?? 0) : 0);
    expect([
      answered(outcome.flood.list) > 0,
      answered(outcome.flood.endpoints) > 0,
      stalledEnded > 0,
    ]).toEqual([true, true, true]);
    // And the webhook still refuses what it should: it answered, not failed open.
    expect(await widgets.create('too-big', { size: 10 }).then(() => 0, statusOf)).toBe(422);
  }, 150_000);
});
