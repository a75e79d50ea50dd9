import { createOperator } from '../../../src/framework/runtime/operator.js';
import { Identity, InvalidIdentityError } from '../../../src/framework/state/identity.js';
import { silentLogger } from '../../../src/framework/observability/logger.js';

const kubeConfig = {
  getCurrentCluster: () => ({ server: 'http://127.0.0.1:1' }),
  applyToHTTPSOptions: async () => undefined,
};

describe('the identity option', () => {
  test('defaults to konductor.dev', () => {
    expect(createOperator({ kubeConfig, logger: silentLogger() }).identity).toBe(Identity.DEFAULT);
  });

  test('names the operator', () => {
    expect(
      createOperator({ kubeConfig, logger: silentLogger(), identity: 'db-operator.example.com' })
        .identity.finalizer,
    ).toBe('db-operator.example.com/finalizer');
  });

  test('refuses a value that is not a DNS-1123 subdomain before anything starts, naming it', () => {
    expect(() =>
      createOperator({ kubeConfig, logger: silentLogger(), identity: 'DB_Operator' }),
    ).toThrow(InvalidIdentityError);
    expect(() =>
      createOperator({ kubeConfig, logger: silentLogger(), identity: 'DB_Operator' }),
    ).toThrow('"DB_Operator" is not a DNS-1123 subdomain');
  });
});
