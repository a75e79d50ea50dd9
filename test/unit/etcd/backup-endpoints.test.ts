import { clientServiceEndpoint } from '../../../src/handlers/etcd/backup-endpoints.js';

describe('an EtcdBackup endpoint may only name a client Service in its own namespace', () => {
  it.each([
    ['http://db-client:2379'],
    ['http://db-client.team-a:2379'],
    ['http://db-client.team-a.svc:2379'],
    ['http://db-client.team-a.svc.cluster.local:2379'],
    ['db-client:2379'],
  ])('%s is the client Service of cluster db', (endpoint) => {
    expect(clientServiceEndpoint('team-a', endpoint)).toEqual({ cluster: 'db', url: 'http://db-client.team-a.svc:2379' });
  });

  it.each([
    ['another namespace', 'http://db-client.team-b:2379'],
    ['another namespace, fully qualified', 'http://db-client.team-b.svc.cluster.local:2379'],
    ['an IP address', 'http://10.0.0.7:2379'],
    ['loopback', 'http://127.0.0.1:2379'],
    ['a host outside the cluster', 'http://db-client.example.com:2379'],
    ['a Service that is no client Service', 'http://kubernetes.default:443'],
    ['credentials in the URL', 'http://user:pw@db-client:2379'],
    ['a path', 'http://db-client:2379/v3/kv'],
    ['another port', 'http://db-client:2380'],
    ['another scheme', 'unix://db-client:2379'],
  ])('%s is refused with a reason', (_what, endpoint) => {
    const result = clientServiceEndpoint('team-a', endpoint);
    expect(result).toHaveProperty('problem');
    expect((result as { problem: string }).problem).toContain(JSON.stringify(endpoint));
  });
});
