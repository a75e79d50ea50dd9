import { OTHER_PATH, requestShape } from '../../../src/framework/api/request-shape.js';

/** Verbs and path templates are metric labels and span names: bounded, with no tenant's names in them. */
describe('requestShape', () => {
  test.each([
    [
      'GET',
      '/apis/example.com/v1/namespaces/team-a/widgets/w1',
      'get',
      '/apis/example.com/v1/namespaces/{namespace}/widgets/{name}',
    ],
    [
      'GET',
      '/apis/example.com/v1/namespaces/team-a/widgets?limit=500',
      'list',
      '/apis/example.com/v1/namespaces/{namespace}/widgets',
    ],
    ['GET', '/apis/example.com/v1/widgets', 'list', '/apis/example.com/v1/widgets'],
    [
      'PATCH',
      '/apis/example.com/v1/namespaces/team-a/widgets/w1/status',
      'patch',
      '/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status',
    ],
    ['POST', '/api/v1/namespaces/team-a/events', 'create', '/api/v1/namespaces/{namespace}/events'],
    [
      'PUT',
      '/apis/coordination.k8s.io/v1/namespaces/ops/leases/konductor-leader',
      'update',
      '/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}',
    ],
    [
      'DELETE',
      '/api/v1/namespaces/team-a/pods/p',
      'delete',
      '/api/v1/namespaces/{namespace}/pods/{name}',
    ],
    [
      'DELETE',
      '/api/v1/namespaces/team-a/pods',
      'deletecollection',
      '/api/v1/namespaces/{namespace}/pods',
    ],
    ['GET', '/api/v1/namespaces/team-a', 'get', '/api/v1/namespaces/{name}'],
    ['PUT', '/api/v1/namespaces/team-a/finalize', 'update', '/api/v1/namespaces/{name}/finalize'],
    ['GET', '/api/v1/namespaces', 'list', '/api/v1/namespaces'],
    ['GET', '/apis/example.com/v1', 'get', '/apis/example.com/v1'],
    ['GET', '/version', 'get', '/version'],
  ])('%s %s is %s of %s', (method, path, verb, template) => {
    expect(requestShape(method, path)).toEqual({ verb, template });
  });

  test('a streaming GET is a watch', () => {
    expect(requestShape('GET', '/api/v1/namespaces/a/pods', true).verb).toBe('watch');
  });

  test.each([
    '/apis/example.com/v1/namespaces/a/widgets/w/status/extra',
    '/apis/Example.com/v1/widgets',
    '/apis/example.com/v1/namespaces/a/widgets/w/ST ATUS',
    `/apis/${'g'.repeat(120)}.com/v1/namespaces/a/widgets`,
    '/metrics/anything',
  ])('%s is outside the grammar (or too long) and becomes /{other}', (path) => {
    expect(requestShape('GET', path).template).toBe(OTHER_PATH);
  });
});
