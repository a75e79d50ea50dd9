/** A webhook server on loopback for one `describe` of a spec. */
import { ApiClient } from '../../src/framework/index.js';
import {
  WebhookServer,
  type WebhookServerOptions,
} from '../../src/framework/admission/webhook-server.js';

/** A client that reaches no API server: the handlers of these specs never call one. */
const offlineClient = new ApiClient({
  getCurrentCluster: () => ({ server: 'https://127.0.0.1:1' }),
  applyToHTTPSOptions: async () => undefined,
});

/**
 * A webhook server on 127.0.0.1 for the enclosing `describe`: started before its tests (`started` gets
 * the port), stopped after them once `beforeStop` has run (it releases handlers still waiting).
 */
export function serveForSuite(
  options: Pick<WebhookServerOptions, 'registry' | 'logger' | 'certificate'> &
    Partial<WebhookServerOptions>,
  started: (port: number) => void,
  beforeStop: () => void = () => undefined,
): WebhookServer {
  const server = new WebhookServer({
    port: 0,
    host: '127.0.0.1',
    client: offlineClient,
    resolve: () => undefined,
    ...options,
  });
  beforeAll(async () => started(await server.start()));
  afterAll(async () => {
    beforeStop();
    await server.stop();
  });
  return server;
}
