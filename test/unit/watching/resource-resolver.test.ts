import nock from 'nock';
import type { ApiClient } from '../../../src/framework/api/api-client.js';
import type { Resource } from '../../../src/framework/api/resource.js';
import { resolveResource } from '../../../src/framework/watching/resource-resolver.js';
import { LogCapture } from '../../support/log-capture.js';
import { waitFor } from '../../support/wait-for.js';
import { makeClient, quickly, SERVER } from './fake-api.js';

const DISCOVERY = '/apis/example.com/v1';
const served = {
  kind: 'APIResourceList',
  groupVersion: 'example.com/v1',
  resources: [
    {
      name: 'widgets',
      singularName: 'widget',
      namespaced: true,
      kind: 'Widget',
      shortNames: ['wd'],
    },
    { name: 'widgets/status', namespaced: true, kind: 'Widget' },
  ],
};
const notFound = {
  kind: 'Status',
  apiVersion: 'v1',
  status: 'Failure',
  code: 404,
  reason: 'NotFound',
  message: 'the server could not find the requested resource',
};

let client: ApiClient;
let log: LogCapture;

beforeEach(() => {
  client = makeClient();
  log = new LogCapture();
});

afterEach(() => {
  nock.cleanAll();
  client.close();
});

describe('resolving a resource whose CRD is missing', () => {
  test('logs a warning naming the resource and saying it retries, then resolves once the CRD is served', async () => {
    nock(SERVER).get(DISCOVERY).times(2).reply(404, notFound);
    nock(SERVER).get(DISCOVERY).reply(200, served);
    const resolved: Resource[] = [];

    const subscription = resolveResource(
      client,
      { apiVersion: 'example.com/v1', name: 'widgets' },
      {
        logger: log.logger,
        backoff: { initialMs: 10, jitter: 0 },
      },
    ).subscribe((resource) => resolved.push(resource));
    await waitFor(() => resolved.length === 1, { what: 'the resource to resolve', ...quickly });
    subscription.unsubscribe();

    const warnings = log.atLeast('warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toMatch(
      /cannot resolve widgets in example\.com\/v1: .*is the CRD for 'widgets' installed\?; retrying/,
    );
    expect(log.containing('cannot resolve widgets')).toHaveLength(2); // the repeat is logged quietly (debug)
    expect(log.containing('resource is now served')).toHaveLength(1);
    expect(resolved).toEqual([
      {
        group: 'example.com',
        version: 'v1',
        plural: 'widgets',
        kind: 'Widget',
        namespaced: true,
        hasStatus: true,
      },
    ]);
  });
});
