import { defaultReplicaIdentity } from '../../../src/framework/runtime/replica-identity.js';

describe('the default replica identity in the Lease', () => {
  const saved = process.env.POD_NAME;
  afterEach(() => {
    if (saved === undefined) delete process.env.POD_NAME;
    else process.env.POD_NAME = saved;
  });

  it("is the Pod's name in a Pod, so a restarted container is the same replica", () => {
    process.env.POD_NAME = 'konductor-7d9f-abcde';
    expect(defaultReplicaIdentity()).toBe('konductor-7d9f-abcde');
    expect(defaultReplicaIdentity()).toBe(defaultReplicaIdentity());
  });

  it('is the host name with a random suffix outside a Pod, so two processes on one host differ', () => {
    delete process.env.POD_NAME;
    const first = defaultReplicaIdentity();
    expect(first).toMatch(/-[0-9a-f]{6}$/);
    expect(defaultReplicaIdentity()).not.toBe(first);
  });
});
