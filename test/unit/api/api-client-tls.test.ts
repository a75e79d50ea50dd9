import type { RequestOptions } from 'node:https';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import { ApiError } from '../../../src/framework/api/api-error.js';

/** Cluster access whose kubeconfig gives a client key that is not a key. */
const brokenKey = {
  getCurrentCluster: () => ({ server: 'https://127.0.0.1:1' }),
  applyToHTTPSOptions: async (options: RequestOptions) => {
    options.cert = Buffer.from(
      '-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n',
    );
    options.key = Buffer.from(
      '-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n',
    );
  },
};

describe("a client whose kubeconfig's TLS material does not load", () => {
  test('a request fails with an ApiError naming it, sent nowhere', async () => {
    const client = new ApiClient(brokenKey);
    const failure = client.request('GET', '/api/v1/namespaces').catch((error: unknown) => error);

    expect(await failure).toBeInstanceOf(ApiError);
    expect(String(((await failure) as Error).message)).toContain('GET /api/v1/namespaces');
    client.close();
  });
});
