import { parseCommandLine } from '../../../src/cli/command-line.js';
import type { RunOptions } from '../../../src/cli/options/run.js';
import { usageError } from './parse-helpers.js';

function run(args: string[], env: Record<string, string> = {}): RunOptions {
  const command = parseCommandLine(['run', 'handlers/', ...args], env);
  if (command.kind !== 'run') throw new Error(`expected a run command, got ${command.kind}`);
  return command.options;
}

describe('konductor run: webhook options', () => {
  test('--webhook-service names the Service the API server calls, with an optional port', () => {
    expect(run(['--webhook-service', 'ops/op-webhooks']).webhookService).toEqual({
      namespace: 'ops',
      name: 'op-webhooks',
    });
    expect(run(['--webhook-service', 'ops/op-webhooks:8443']).webhookService).toEqual({
      namespace: 'ops',
      name: 'op-webhooks',
      port: 8443,
    });
  });

  test('the Service can come from KONDUCTOR_WEBHOOK_SERVICE, as deploy/ sets it', () => {
    expect(
      run([], { KONDUCTOR_WEBHOOK_SERVICE: 'konductor-system/konductor-webhooks' }).webhookService,
    ).toEqual({ namespace: 'konductor-system', name: 'konductor-webhooks' });
  });

  test('--webhook-url and --webhook-port are taken as given', () => {
    expect(
      run(['--webhook-url', 'https://127.0.0.1:9443', '--webhook-port', '9443']),
    ).toMatchObject({ webhookUrl: 'https://127.0.0.1:9443', webhookPort: 9443 });
  });

  test('--no-webhooks turns them off; they are on by default', () => {
    expect(run([]).webhooks).toBe(true);
    expect(run(['--no-webhooks']).webhooks).toBe(false);
    expect(run([], { KONDUCTOR_WEBHOOKS: 'false' }).webhooks).toBe(false);
  });

  test('--webhook-client-ca names the PEM file of the API server’s webhook client CA, also from KONDUCTOR_WEBHOOK_CLIENT_CA; unset by default', () => {
    expect(
      run(['--webhook-client-ca', '/etc/konductor/webhook-client-ca.crt']).webhookClientCA,
    ).toBe('/etc/konductor/webhook-client-ca.crt');
    expect(run([], { KONDUCTOR_WEBHOOK_CLIENT_CA: '/ca.crt' }).webhookClientCA).toBe('/ca.crt');
    expect(run([]).webhookClientCA).toBeUndefined();
    expect(usageError(['run', 'h/', '--webhook-client-ca', ' ']).message).toMatch(
      /--webhook-client-ca must not be empty/,
    );
  });

  test('a plain-http URL is refused: the API server calls webhooks over TLS only', () => {
    expect(usageError(['run', 'h/', '--webhook-url', 'http://127.0.0.1:9443']).message).toMatch(
      /must start with https/,
    );
  });

  test('a Service reference that is not namespace/name is refused, naming the flag', () => {
    expect(usageError(['run', 'h/', '--webhook-service', 'just-a-name']).message).toMatch(
      /--webhook-service .* must be <namespace>\/<name>/,
    );
    expect(usageError(['run', 'h/', '--webhook-service', 'Ops/x']).message).toMatch(
      /not a namespace name/,
    );
  });
});
