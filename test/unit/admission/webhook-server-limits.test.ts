import { jest } from '@jest/globals';
import { Registry, silentLogger, type KubeObject } from '../../../src/framework/index.js';
import { conversionPath, webhookPath } from '../../../src/framework/admission/webhook-paths.js';
import { clientCertificates, selfSignedCertificate } from '../../support/serving-certificate.js';
import { waitFor } from '../../support/wait-for.js';
import { serveForSuite } from '../../support/webhook-server-suite.js';
import {
  admissionReview,
  send,
  stallRequest,
  type Answer,
} from '../../support/webhook-requests.js';

/**
 * What a caller on the Pod network can make the webhook server hold: bodies are bounded in bytes and
 * JSON values before parsing, in time after their headers, and per remote address; with a client
 * CA, only the API server's certificate reaches an admission handler.
 */

const serving = selfSignedCertificate('webhooks');
const ca = [serving.cert];
const KiB = 1024;
const path = webhookPath({ kind: 'validate', id: 'Widgets.check' });
/** Another loopback address: a Pod other than the API server. */
const POD = '127.0.0.2';

const registry = (): Registry =>
  new Registry()
    .registerAdmission({
      kind: 'validate',
      id: 'Widgets.check',
      resource: { apiVersion: 'example.com/v1', name: 'widgets' },
      options: {},
      fn: () => undefined,
    })
    .registerConversion({
      id: 'Widgets.convert',
      group: 'example.com',
      name: 'widgets',
      fn: ({ object }) => object,
    });

const widget = (spec: Record<string, unknown> = { size: 1 }): KubeObject => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name: 'w', namespace: 'team-a' },
  spec,
});
/** A review of about `size` bytes, padded with one string (one JSON value). */
const reviewOfSize = (size: number): unknown =>
  admissionReview(widget({ size: 1, padding: 'x'.repeat(size) }));
const statusOf = (answer: Answer): [number, string] => [answer.status, answer.body.trim()];

describe('the webhook server bounds a body’s parsed size before JSON.parse', () => {
  let port = 0;
  serveForSuite(
    {
      registry: registry(),
      logger: silentLogger(),
      certificate: serving,
      maxBodyBytes: 1024 * KiB,
      json: { maxValues: 1_000, maxDepth: 20 },
    },
    (bound) => (port = bound),
  );

  test('a list of empty objects past the value limit is refused 413 and never reaches JSON.parse', async () => {
    const body = `[${Array(50_000).fill('{}').join(',')}]`;
    const parse = jest.spyOn(JSON, 'parse');
    try {
      const answer = await send(port, path, body, { ca });
      expect(statusOf(answer)).toEqual([413, 'the request body holds more than 1,000 JSON values']);
      expect(
        parse.mock.calls.filter(([text]) => typeof text === 'string' && text.length > 1_000),
      ).toEqual([]);
    } finally {
      parse.mockRestore();
    }
  });

  test('a well-formed AdmissionReview whose object holds more values than the limit is refused 413', async () => {
    const endpoints = { ...widget(), subsets: [{ addresses: Array(5_000).fill({}) }] };
    expect(statusOf(await send(port, path, admissionReview(endpoints), { ca }))).toEqual([
      413,
      'the request body holds more than 1,000 JSON values',
    ]);
  });

  test('a body nesting deeper than the limit is refused 400', async () => {
    const deep = JSON.parse(`${'{"a":'.repeat(30)}1${'}'.repeat(30)}`) as Record<string, unknown>;
    expect(statusOf(await send(port, path, admissionReview(widget(deep)), { ca }))).toEqual([
      400,
      'the request body nests JSON deeper than 20 levels',
    ]);
  });

  test('a review within the limits is answered, and the server serves on after refusals', async () => {
    const answer = await send(
      port,
      path,
      admissionReview(widget({ size: 1, list: Array(900).fill(0) })),
      { ca },
    );
    expect([answer.status, JSON.parse(answer.body).response.allowed]).toEqual([200, true]);
  });
});

describe('the webhook server under a flood of large reviews', () => {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let entered = 0;
  const slow = new Registry().registerAdmission({
    kind: 'validate',
    id: 'Widgets.slow',
    resource: { apiVersion: 'example.com/v1', name: 'widgets' },
    options: {},
    fn: async () => {
      entered += 1;
      await gate;
    },
  });
  // Bodies of about 40 KiB: two fit in the 100 KiB held at once, a third does not (one address may hold all of it here).
  let port = 0;
  const limits = {
    maxBodyBytes: 64 * KiB,
    maxBufferedBytes: 100 * KiB,
    maxBufferedBytesPerSource: 100 * KiB,
  };
  serveForSuite(
    { registry: slow, logger: silentLogger(), certificate: serving, ...limits },
    (bound) => (port = bound),
    () => release(),
  );
  const large = (uid: string): unknown =>
    admissionReview(
      {
        ...widget(),
        metadata: {
          name: 'w',
          namespace: 'team-a',
          annotations: { padding: 'x'.repeat(40 * KiB) },
        },
      },
      uid,
    );
  const slowPath = webhookPath({ kind: 'validate', id: 'Widgets.slow' });

  test('a review past the bytes held by reviews in flight is answered 429 with Retry-After, and served again once they are answered', async () => {
    const held = [
      send(port, slowPath, large('a'), { ca }),
      send(port, slowPath, large('b'), { ca }),
    ];
    await waitFor(() => entered === 2, { what: 'both reviews to reach the handler' });
    const refused = await send(port, slowPath, large('c'), { ca });
    expect([refused.status, refused.retryAfter, refused.body]).toEqual([
      429,
      '1',
      'too many reviews in flight; retry\n',
    ]);

    release();
    expect((await Promise.all(held)).map((answer) => answer.status)).toEqual([200, 200]);
    const again = await send(port, slowPath, large('d'), { ca });
    expect([again.status, JSON.parse(again.body).response]).toEqual([
      200,
      { uid: 'd', allowed: true },
    ]);
  });
});

describe('the webhook server gives one address at most its share of the bytes in flight', () => {
  let port = 0;
  // 128 KiB held at once, 64 KiB of it by one address; bodies stalled here stay until closed.
  serveForSuite(
    {
      registry: registry(),
      logger: silentLogger(),
      certificate: serving,
      maxBodyBytes: 100 * KiB,
      maxBufferedBytes: 128 * KiB,
      bodyTimeoutMs: 60_000,
    },
    (bound) => (port = bound),
  );

  test('two stalled bodies from one Pod: the second is answered 429 and the API server’s review is served', async () => {
    const first = stallRequest(port, path, 100 * KiB, Buffer.alloc(60 * KiB, 0x20), {
      ca,
      localAddress: POD,
    });
    await first.sent;
    const second = stallRequest(port, path, 100 * KiB, Buffer.alloc(60 * KiB, 0x20), {
      ca,
      localAddress: POD,
    });
    try {
      let refused: { status: number } | undefined;
      void Promise.race([first.answered, second.answered]).then((answer) => (refused = answer));
      await waitFor(() => refused !== undefined, {
        what: 'one of the two stalled bodies from the Pod to be refused',
        timeoutMs: 10_000,
      });
      expect(refused?.status).toBe(429);
      const honest = await send(port, path, reviewOfSize(60 * KiB), {
        ca,
        localAddress: '127.0.0.1',
      });
      expect(honest.status).toBe(200);
    } finally {
      first.close();
      second.close();
    }
  });
});

describe('the webhook server gives a body a deadline after its headers', () => {
  let port = 0;
  // One address may hold 100 KiB: a second 90 KiB body from it fits only once the first gave its bytes back.
  serveForSuite(
    {
      registry: registry(),
      logger: silentLogger(),
      certificate: serving,
      maxBodyBytes: 100 * KiB,
      maxBufferedBytes: 200 * KiB,
      bodyTimeoutMs: 300,
    },
    (bound) => (port = bound),
  );

  test('a body still incomplete at the deadline is answered 408, its connection closed and its bytes given back', async () => {
    const stalled = stallRequest(port, path, 100 * KiB, Buffer.alloc(90 * KiB, 0x20), {
      ca,
      localAddress: POD,
    });
    expect(await stalled.answered).toEqual({ status: 408, closed: true });
    expect((await send(port, path, reviewOfSize(90 * KiB), { ca, localAddress: POD })).status).toBe(
      200,
    );
  });
});

describe('the webhook server with a client CA accepts admission requests from the API server only', () => {
  const trusted = clientCertificates('webhook client CA');
  const stranger = clientCertificates('another CA').client;
  let port = 0;
  serveForSuite(
    {
      registry: registry(),
      logger: silentLogger(),
      certificate: serving,
      maxBodyBytes: 100 * KiB,
      bodyTimeoutMs: 60_000,
      clientCA: trusted.ca,
    },
    (bound) => (port = bound),
  );

  test('a caller without a certificate is refused 403 before its body is read', async () => {
    const stalled = stallRequest(port, path, 100 * KiB, Buffer.from('{'), { ca });
    expect(await stalled.answered).toEqual({ status: 403, closed: true });
  });

  test('a caller whose certificate another CA signed is refused 403', async () => {
    const answer = await send(port, path, admissionReview(widget()), { ca, client: stranger });
    expect(statusOf(answer)).toEqual([
      403,
      'admission reviews are accepted only from a caller with a client certificate signed by the webhook client CA',
    ]);
  });

  test('the API server’s certificate is accepted', async () => {
    const answer = await send(port, path, admissionReview(widget()), {
      ca,
      client: trusted.client,
    });
    expect([answer.status, JSON.parse(answer.body).response.allowed]).toEqual([200, true]);
  });

  test('a conversion request needs no certificate: the API server presents none to conversion webhooks', async () => {
    const review = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'ConversionReview',
      request: { uid: 'c1', desiredAPIVersion: 'example.com/v1', objects: [widget()] },
    };
    expect(
      (await send(port, conversionPath('example.com', 'widgets'), review, { ca })).status,
    ).toBe(200);
  });
});
