import { X509Certificate } from 'node:crypto';
import { createServer, get } from 'node:https';
import type { AddressInfo } from 'node:net';
import { ApiClient } from '../../../src/framework/index.js';
import {
  CertificateStore,
  type CertificateBundle,
  type CertificateStoreOptions,
} from '../../../src/framework/admission/certificate-store.js';
import {
  issueAuthority,
  issueServingCertificate,
} from '../../../src/framework/admission/certificates.js';
import { splitPemCertificates } from '../../../src/framework/admission/certificates.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { LogCapture } from '../../support/log-capture.js';
import { waitFor } from '../../support/wait-for.js';

// The webhook certificates in a Secret on a real API server: created once, shared by replicas,
// repaired when unusable, and rotated so that a TLS client trusting only the published CA bundle
// always completes the handshake.
interface SecretObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  type?: string;
  data?: Record<string, string>;
}

const HOSTS = ['webhook.certs.svc', '127.0.0.1'];
let client: ApiClient;
let namespace: string;
const stores: CertificateStore[] = [];

beforeAll(async () => {
  const kc = sharedKubeConfig();
  client = new ApiClient(kc, { fieldManager: 'certificate-store-spec' });
  namespace = await uniqueNamespace(kc, 'certs');
});

afterEach(() => {
  for (const store of stores.splice(0)) store.stop();
});

afterAll(() => client.close());

function store(
  secretName: string,
  options: Partial<CertificateStoreOptions> = {},
): CertificateStore {
  const created = new CertificateStore({
    client,
    namespace,
    secretName,
    hosts: HOSTS,
    logger: new LogCapture().logger,
    ...options,
  });
  stores.push(created);
  return created;
}

const secrets = () => client.resource<SecretObject>('v1', 'secrets');
const readSecret = (name: string): Promise<SecretObject> => secrets().get({ namespace, name });
const fingerprints = (bundle: string): string[] =>
  splitPemCertificates(bundle).map((pem) => new X509Certificate(pem).fingerprint256);
const signerOf = (bundle: CertificateBundle): string =>
  splitPemCertificates(bundle.caBundle)
    .map((pem) => new X509Certificate(pem))
    .find((ca) => new X509Certificate(bundle.cert).checkIssued(ca))!.fingerprint256;

/** Serves `served` over HTTPS on 127.0.0.1 and makes one request trusting only `caBundle`: 'ok' or the client's error code. */
async function handshake(served: { cert: string; key: string }, caBundle: string): Promise<string> {
  const server = createServer(
    { cert: served.cert, key: served.key, minVersion: 'TLSv1.2' },
    (_request, response) => response.end('ok'),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise<string>((resolve) => {
      const request = get(
        { host: '127.0.0.1', port, path: '/', ca: caBundle, agent: false },
        (response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => (body += chunk.toString()));
          response.on('end', () => resolve(body));
        },
      );
      request.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    });
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

describe('ensure', () => {
  test('on first use creates a kubernetes.io/tls Secret whose serving certificate a client trusting the CA bundle accepts', async () => {
    const bundle = await store('first').ensure();
    const secret = await readSecret('first');

    expect(secret.type).toBe('kubernetes.io/tls');
    expect(Object.keys(secret.data ?? {}).sort()).toEqual([
      'ca-signer.crt',
      'ca-signer.key',
      'ca.crt',
      'tls.crt',
      'tls.key',
    ]);
    expect(Buffer.from(secret.data!['tls.crt']!, 'base64').toString()).toBe(bundle.cert);
    expect(Buffer.from(secret.data!['ca.crt']!, 'base64').toString()).toBe(bundle.caBundle);
    expect(fingerprints(bundle.caBundle)).toHaveLength(1);
    expect(await handshake(bundle, bundle.caBundle)).toBe('ok');
  });

  test('a second store sharing the Secret gets the same bundle without writing it', async () => {
    const first = await store('shared').ensure();
    const version = (await readSecret('shared')).metadata?.resourceVersion;

    const second = await store('shared').ensure();

    expect(second).toEqual(first);
    expect((await readSecret('shared')).metadata?.resourceVersion).toBe(version);
  });

  test('two replicas starting at once end with one bundle', async () => {
    const [a, b] = await Promise.all([store('race').ensure(), store('race').ensure()]);
    const stored = await readSecret('race');

    expect(a).toEqual(b);
    expect(Buffer.from(stored.data!['tls.crt']!, 'base64').toString()).toBe(a.cert);
  });

  test('a Secret holding garbage is replaced, with a warning naming it', async () => {
    const garbage = Buffer.from('not a certificate').toString('base64');
    await secrets().create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'garbage', namespace },
      type: 'kubernetes.io/tls',
      data: {
        'tls.crt': garbage,
        'tls.key': garbage,
        'ca.crt': garbage,
        'ca-signer.crt': garbage,
        'ca-signer.key': garbage,
      },
    });
    const logs = new LogCapture();

    const bundle = await store('garbage', { logger: logs.logger }).ensure();

    expect(await handshake(bundle, bundle.caBundle)).toBe('ok');
    expect(logs.atLeast('warn').map((line) => line.msg)).toEqual([
      expect.stringContaining(`Secret ${namespace}/garbage holds unusable contents`),
    ]);
  });

  test('a serving key that does not belong to its certificate is replaced', async () => {
    const first = await store('mismatch').ensure();
    const stranger = await issueServingCertificate(
      await issueAuthority({ commonName: 'x', now: Date.now(), validityMs: 3_600_000 }),
      { hosts: HOSTS, now: Date.now(), validityMs: 3_600_000 },
    );
    await secrets().patch(
      { namespace, name: 'mismatch' },
      { data: { 'tls.key': Buffer.from(stranger.key).toString('base64') } },
    );

    const repaired = await store('mismatch').ensure();

    expect(repaired.cert).not.toBe(first.cert);
    expect(repaired.caBundle).toBe(first.caBundle);
    expect(await handshake(repaired, repaired.caBundle)).toBe('ok');
  });

  test('an unreadable certificate added to ca.crt is removed again, keeping the serving certificate', async () => {
    const first = await store('extra').ensure();
    const tampered = `${first.caBundle}-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n`;
    await secrets().patch(
      { namespace, name: 'extra' },
      { data: { 'ca.crt': Buffer.from(tampered).toString('base64') } },
    );

    const repaired = await store('extra').ensure();

    expect(repaired).toEqual(first);
    expect(Buffer.from((await readSecret('extra')).data!['ca.crt']!, 'base64').toString()).toBe(
      first.caBundle,
    );
  });

  test('a Secret of another type is replaced by a kubernetes.io/tls one', async () => {
    await secrets().create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'opaque', namespace },
      type: 'Opaque',
      data: { unrelated: 'eA==' },
    });

    const bundle = await store('opaque').ensure();

    expect((await readSecret('opaque')).type).toBe('kubernetes.io/tls');
    expect(await handshake(bundle, bundle.caBundle)).toBe('ok');
  });
});

describe('rotation', () => {
  test('renews the serving certificate and rotates the CA: bundle [old, new] → serving switched → old dropped, never failing a handshake', async () => {
    const options = {
      caValidityMs: 24_000,
      servingValidityMs: 9_000,
      overlapMs: 3_000,
      pollIntervalMs: 500,
    };
    const delivered: CertificateBundle[] = [];
    const failures: string[] = [];
    const replica = store('rotating', options);
    const other = store('rotating', options);
    const initial = await replica.ensure();
    delivered.push(initial);
    let otherLatest = await other.ensure();

    replica.start(async (bundle) => {
      const previous = delivered[delivered.length - 1]!;
      delivered.push(bundle);
      // Both orders of a rollout: a server still on the old certificate with the new bundle published,
      // and a server already on the new certificate while the old bundle is still published.
      for (const [served, trusted] of [
        [bundle, bundle.caBundle],
        [previous, bundle.caBundle],
        [bundle, previous.caBundle],
      ] as const) {
        const answer = await handshake(served, trusted);
        if (answer !== 'ok') failures.push(`step ${delivered.length - 1}: ${answer}`);
      }
    });
    other.start((bundle) => {
      otherLatest = bundle;
    });

    const initialCa = fingerprints(initial.caBundle)[0]!;
    await waitFor(
      () => delivered.some((bundle) => !fingerprints(bundle.caBundle).includes(initialCa)),
      { what: 'the first CA to leave the bundle', timeoutMs: 40_000 },
    );

    const shapes = delivered.map((bundle) => ({
      cas: fingerprints(bundle.caBundle),
      signer: signerOf(bundle),
    }));
    const staged = shapes.findIndex(
      (shape) => shape.cas.length === 2 && shape.signer === initialCa,
    );
    const switched = shapes.findIndex(
      (shape) => shape.cas.length === 2 && shape.signer !== initialCa,
    );
    const dropped = shapes.findIndex((shape) => !shape.cas.includes(initialCa));
    expect(shapes.slice(0, staged).every((shape) => shape.cas.length === 1)).toBe(true);
    expect(staged).toBeGreaterThan(1); // the serving certificate was renewed under the first CA before
    expect(switched).toBeGreaterThan(staged);
    expect(dropped).toBeGreaterThan(switched);
    expect(shapes[dropped]!.cas).toEqual([shapes[switched]!.signer]);
    expect(failures).toEqual([]);
    await waitFor(() => otherLatest.caBundle === delivered[delivered.length - 1]!.caBundle, {
      what: 'the other replica to pick up the rotation',
    });
  });
});
