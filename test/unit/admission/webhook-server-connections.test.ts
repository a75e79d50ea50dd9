import { connect, type Socket } from 'node:net';
import { Registry, silentLogger, type KubeObject } from '../../../src/framework/index.js';
import { webhookPath } from '../../../src/framework/admission/webhook-paths.js';
import { selfSignedCertificate } from '../../support/serving-certificate.js';
import { waitFor } from '../../support/wait-for.js';
import { serveForSuite } from '../../support/webhook-server-suite.js';
import { admissionReview, send } from '../../support/webhook-requests.js';

/**
 * Sockets a caller on the Pod network can hold open without sending a request: bounded in number,
 * per remote address, and in how long the TLS handshake may take.
 */

const serving = selfSignedCertificate('webhooks');
const ca = [serving.cert];
const path = webhookPath({ kind: 'validate', id: 'Widgets.check' });
/** Another loopback address: a Pod other than the API server. */
const POD = '127.0.0.2';

const registry = (): Registry =>
  new Registry().registerAdmission({
    kind: 'validate',
    id: 'Widgets.check',
    resource: { apiVersion: 'example.com/v1', name: 'widgets' },
    options: {},
    fn: () => undefined,
  });
const widget: KubeObject = {
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name: 'w', namespace: 'team-a' },
  spec: { size: 1 },
};

/** A TCP connection from `localAddress` that sends nothing; resolves once connected. */
function idleConnection(
  port: number,
  localAddress: string,
): Promise<{ socket: Socket; closed: () => boolean }> {
  return new Promise((resolve, reject) => {
    let closed = false;
    const socket = connect({ host: '127.0.0.1', port, localAddress }, () =>
      resolve({ socket, closed: () => closed }),
    );
    socket.on('close', () => (closed = true));
    socket.on('error', () => undefined);
    socket.once('error', reject);
  });
}

describe('the webhook server bounds the connections one address holds open', () => {
  let port = 0;
  const held: Socket[] = [];
  serveForSuite(
    {
      registry: registry(),
      logger: silentLogger(),
      certificate: serving,
      connections: { max: 8, perSource: 3 },
      handshakeTimeoutMs: 60_000,
    },
    (bound) => (port = bound),
    () => held.forEach((socket) => socket.destroy()),
  );

  test('a connection past one address’s share is closed at once, and the API server’s address is still served', async () => {
    for (let i = 0; i < 3; i++) held.push((await idleConnection(port, POD)).socket);
    const extra = await idleConnection(port, POD);
    held.push(extra.socket);
    await waitFor(() => extra.closed(), { what: 'the connection past the share to be closed' });
    expect(held.slice(0, 3).every((socket) => !socket.destroyed)).toBe(true);

    const answer = await send(port, path, admissionReview(widget), { ca });
    expect([answer.status, JSON.parse(answer.body).response.allowed]).toEqual([200, true]);
  });
});

describe('the webhook server bounds the TLS handshake in time', () => {
  let port = 0;
  serveForSuite(
    { registry: registry(), logger: silentLogger(), certificate: serving, handshakeTimeoutMs: 200 },
    (bound) => (port = bound),
  );

  test('a connection that never starts its TLS handshake is closed after handshakeTimeoutMs', async () => {
    const idle = await idleConnection(port, POD);
    await waitFor(() => idle.closed(), { what: 'the idle connection to be closed' });
    expect(idle.closed()).toBe(true);
  });
});
