import { connect } from 'node:tls';
import {
  AdmissionError,
  ApiClient,
  Registry,
  silentLogger,
  type KubeObject,
  type MutationContext,
} from '../../../src/framework/index.js';
import { conversionPath, webhookPath } from '../../../src/framework/admission/webhook-paths.js';
import { WebhookServer } from '../../../src/framework/admission/webhook-server.js';
import { LogCapture } from '../../support/log-capture.js';
import { selfSignedCertificate } from '../../support/serving-certificate.js';
import { serveForSuite } from '../../support/webhook-server-suite.js';
import {
  admissionReview,
  send as sendRequest,
  type Answer,
} from '../../support/webhook-requests.js';

const first = selfSignedCertificate('first');
const second = selfSignedCertificate('second');
const client = new ApiClient({
  getCurrentCluster: () => ({ server: 'https://127.0.0.1:1' }),
  applyToHTTPSOptions: async () => undefined,
});

/** One request on a connection of its own, trusting both test certificates. */
function send(port: number, path: string, body: unknown, method = 'POST'): Promise<Answer> {
  return sendRequest(port, path, body, { method, ca: [first.cert, second.cert] });
}

const widget = (size: number): KubeObject => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name: 'w', namespace: 'team-a' },
  spec: { size },
});

describe('the webhook server over HTTPS', () => {
  let release: () => void = () => undefined;
  let gate: Promise<void> = Promise.resolve();
  let entered: () => void = () => undefined;
  const logs = new LogCapture();
  const registry = new Registry()
    .registerAdmission({
      kind: 'validate',
      id: 'Widgets.check',
      resource: { apiVersion: 'example.com/v1', name: 'widgets' },
      options: {},
      fn: async ({ spec }: MutationContext) => {
        if (spec.size === 99) {
          entered();
          await gate;
        }
        if (Number(spec.size) > 9) throw new AdmissionError('spec.size must be at most 9');
      },
    })
    .registerAdmission({
      kind: 'mutate',
      id: 'Widgets.defaults',
      resource: { apiVersion: 'example.com/v1', name: 'widgets' },
      options: {},
      fn: ({ patch }: MutationContext) => {
        patch.spec.color = 'blue';
      },
    })
    .registerConversion({
      id: 'Widgets.convert',
      group: 'example.com',
      name: 'widgets',
      fn: ({ object }) => ({
        ...object,
        spec: { replicas: (object.spec as { size: number }).size },
      }),
    });
  let port = 0;
  const server = serveForSuite(
    { registry, logger: logs.logger, certificate: first, maxBodyBytes: 64 * 1024 },
    (bound) => (port = bound),
    () => release(),
  );

  test('a validating webhook answers the AdmissionReview with the handler’s refusal, echoing the uid', async () => {
    const answer = await send(
      port,
      webhookPath({ kind: 'validate', id: 'Widgets.check' }),
      admissionReview(widget(12), 'abc'),
    );
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: {
        uid: 'abc',
        allowed: false,
        status: { code: 400, message: 'spec.size must be at most 9' },
      },
    });
  });

  test('the query the API server adds (?timeout=10s) does not change the path', async () => {
    const answer = await send(
      port,
      `${webhookPath({ kind: 'validate', id: 'Widgets.check' })}?timeout=10s`,
      admissionReview(widget(1)),
    );
    expect(JSON.parse(answer.body).response).toEqual({ uid: 'req-1', allowed: true });
  });

  test('a mutating webhook answers with a base64 JSON patch', async () => {
    const answer = await send(
      port,
      webhookPath({ kind: 'mutate', id: 'Widgets.defaults' }),
      admissionReview(widget(1)),
    );
    const { response } = JSON.parse(answer.body) as {
      response: { patch: string; patchType: string };
    };
    expect(response.patchType).toBe('JSONPatch');
    expect(JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8'))).toEqual([
      { op: 'add', path: '/spec/color', value: 'blue' },
    ]);
  });

  test('a conversion webhook answers the ConversionReview', async () => {
    const review = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'ConversionReview',
      request: { uid: 'c1', desiredAPIVersion: 'example.com/v2', objects: [widget(3)] },
    };
    const answer = await send(port, conversionPath('example.com', 'widgets'), review);
    expect(JSON.parse(answer.body)).toEqual({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'ConversionReview',
      response: {
        uid: 'c1',
        convertedObjects: [{ ...widget(3), apiVersion: 'example.com/v2', spec: { replicas: 3 } }],
        result: { status: 'Success' },
      },
    });
  });

  test('requests that are not reviews are refused with a reason and a debug line, and the server goes on serving', async () => {
    const path = webhookPath({ kind: 'validate', id: 'Widgets.check' });
    const refusals = await Promise.all([
      send(port, path, '', 'GET'),
      send(port, '/validate/Nobody.here', admissionReview(widget(1))),
      send(port, path, '{"apiVersion":'),
      send(port, path, {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: { uid: 'x' },
      }),
      send(port, path, {
        ...(admissionReview(widget(1)) as object),
        padding: 'x'.repeat(100 * 1024),
      }),
    ]);
    expect(refusals.map(({ status, body }) => [status, body.trim()])).toEqual([
      [405, 'only POST is served'],
      [404, 'no webhook is served at "/validate/Nobody.here"'],
      [400, 'the request body is not JSON'],
      [400, 'request.operation must be one of CREATE, UPDATE, DELETE, CONNECT'],
      [413, 'the request body is too large'],
    ]);
    expect(logs.containing('webhook request refused').length).toBeGreaterThanOrEqual(5);
    expect((await send(port, path, admissionReview(widget(1)))).status).toBe(200);
  });

  test('a review for another API group is refused: the webhook admits only its resource', async () => {
    const review = admissionReview(widget(1)) as { request: { resource: { group: string } } };
    review.request.resource.group = 'other.io';
    expect(
      (await send(port, webhookPath({ kind: 'validate', id: 'Widgets.check' }), review)).status,
    ).toBe(400);
  });

  test('TLS below 1.2 is refused at the handshake', async () => {
    const handshake = (maxVersion: 'TLSv1.1' | 'TLSv1.2') =>
      new Promise<string>((resolve) => {
        const socket = connect({
          host: '127.0.0.1',
          port,
          ca: [first.cert],
          minVersion: 'TLSv1',
          maxVersion,
          ciphers: 'DEFAULT@SECLEVEL=0',
        });
        socket.on('secureConnect', () => {
          socket.destroy();
          resolve('connected');
        });
        socket.on('error', () => resolve('refused'));
      });
    // The same client offering TLS 1.2 connects: the refusal is the server's minimum version.
    expect([await handshake('TLSv1.1'), await handshake('TLSv1.2')]).toEqual([
      'refused',
      'connected',
    ]);
  });

  test('setCertificate serves the new certificate to new connections while a request in flight is answered', async () => {
    gate = new Promise<void>((resolve) => (release = resolve));
    const running = new Promise<void>((resolve) => (entered = resolve));
    const path = webhookPath({ kind: 'validate', id: 'Widgets.check' });
    const inFlight = send(port, path, admissionReview(widget(99), 'slow'));
    await running;
    server.setCertificate(second);
    const after = await send(port, path, admissionReview(widget(1), 'fast'));
    expect([after.status, after.servedBy]).toEqual([200, 'second']);
    release();
    const slow = await inFlight;
    expect([slow.status, slow.servedBy, JSON.parse(slow.body).response.uid]).toEqual([
      200,
      'first',
      'slow',
    ]);
    server.setCertificate(first);
  });

  test('a certificate that cannot be used is refused and the previous one is served on', async () => {
    expect(() => server.setCertificate({ cert: 'not a certificate', key: first.key })).toThrow(
      'it keeps serving the previous one',
    );
    const answer = await send(
      port,
      webhookPath({ kind: 'validate', id: 'Widgets.check' }),
      admissionReview(widget(1)),
    );
    expect([answer.status, answer.servedBy]).toEqual([200, 'first']);
  });

  test('stop() closes the server', async () => {
    const other = new WebhookServer({
      registry,
      port: 0,
      host: '127.0.0.1',
      certificate: first,
      logger: silentLogger(),
      client,
      resolve: () => undefined,
    });
    const otherPort = await other.start();
    expect(other.listening).toBe(true);
    await other.stop();
    expect(other.listening).toBe(false);
    await expect(send(otherPort, '/', {})).rejects.toThrow();
  });
});
