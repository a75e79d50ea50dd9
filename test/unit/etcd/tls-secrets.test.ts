import { ApiError, type ApiClient } from '../../../src/framework/index.js';
import { readClusterTLS } from '../../../src/handlers/etcd/tls-secrets.js';
import {
  issueCA,
  issueEtcdTLS,
  issueLeaf,
  tlsSecrets,
  TLS_SPEC,
  type EtcdTLS,
} from '../../support/etcd-tls.js';

const policy = {
  peerSecret: TLS_SPEC.static.member.peerSecret,
  serverSecret: TLS_SPEC.static.member.serverSecret,
  operatorSecret: TLS_SPEC.static.operatorSecret,
};

/** An ApiClient that answers Secret reads from `secrets` (name → data) and 404 otherwise. */
function secretsClient(secrets: { name: string; data: Record<string, string> }[]): ApiClient {
  const get = ({ name }: { name: string }): Promise<unknown> => {
    const found = secrets.find((s) => s.name === name);
    return found
      ? Promise.resolve({ metadata: { name }, data: found.data })
      : Promise.reject(new ApiError(404, `secrets "${name}" not found`, 'NotFound'));
  };
  return { resource: () => ({ get }) } as unknown as ApiClient;
}

async function problemOf(tls: EtcdTLS): Promise<string | undefined> {
  const read = await readClusterTLS(secretsClient(tlsSecrets(tls)), 'ns', policy);
  return 'problem' in read ? read.problem : undefined;
}

describe('readClusterTLS', () => {
  let good: EtcdTLS;
  beforeAll(async () => {
    good = await issueEtcdTLS('ns', 'c');
  });

  test("accepts upstream's layout: one CA, peer and server certificates for the members, a client certificate", async () => {
    const read = await readClusterTLS(secretsClient(tlsSecrets(good)), 'ns', policy);
    expect('digest' in read && read.digest).toMatch(/^[0-9a-f]{32}$/);
    expect('credentials' in read && read.credentials?.cert.toString()).toBe(good.client.cert);
  });

  test('the digest changes with any certificate, so members roll onto new ones', async () => {
    const renewed = await issueEtcdTLS('ns', 'c', good.ca);
    const [a, b] = await Promise.all(
      [good, renewed].map((tls) => readClusterTLS(secretsClient(tlsSecrets(tls)), 'ns', policy)),
    );
    expect(a && 'digest' in a && b && 'digest' in b && a.digest !== b.digest).toBe(true);
  });

  test('refuses a server certificate another CA signed: the operator could not trust the members', async () => {
    const server = await issueLeaf(await issueCA('another CA'), 'c server', [
      'localhost',
      '*.c.ns.svc',
    ]);
    expect(await problemOf({ ...good, server })).toBe(
      "Secret ns/etcd-server-tls (spec.TLS.static.member.serverSecret): server.crt is not signed by a CA in the operator Secret's etcd-client-ca.crt, so the operator could not trust the members",
    );
  });

  test('refuses a server certificate that does not name localhost, which the readiness probe dials', async () => {
    const server = await issueLeaf(good.ca, 'c server', ['*.c.ns.svc']);
    expect(await problemOf({ ...good, server })).toMatch(/server.crt does not name localhost/);
  });

  test('refuses a peer certificate its own CA file does not cover', async () => {
    const peer = await issueLeaf(await issueCA('another CA'), 'c peer', ['*.c.ns.svc']);
    expect(await problemOf({ ...good, peer })).toMatch(
      /Secret ns\/etcd-peer-tls .*peer.crt is not signed by a CA in peer-ca.crt/,
    );
  });

  test('names a missing Secret and the keys it needs', async () => {
    const read = await readClusterTLS(secretsClient([]), 'ns', policy);
    expect('problem' in read && read.problem).toBe(
      'Secret ns/etcd-peer-tls (spec.TLS.static.member.peerSecret) does not exist: create it with the keys peer-ca.crt, peer.crt, peer.key',
    );
  });
});
