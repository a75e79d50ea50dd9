import { HealthServer, HealthServerError } from '../../../src/framework/runtime/health-server.js';

function server(port: number): HealthServer {
  return new HealthServer({ port, host: '127.0.0.1', liveness: [], readiness: [], metrics: () => Promise.resolve('') });
}

describe('the health server', () => {
  const servers: HealthServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.stop()));
  });

  function started(port: number): HealthServer {
    const s = server(port);
    servers.push(s);
    return s;
  }

  test('on a port already in use, start() rejects naming the port, the cause and what to do', async () => {
    const port = await started(0).start();
    const second = started(port);

    const failure = await second.start().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(HealthServerError);
    expect(failure).toMatchObject({ port, host: '127.0.0.1', code: 'EADDRINUSE' });
    expect((failure as Error).message).toBe(
      `the health server cannot listen on 127.0.0.1:${port}: the port is already in use (EADDRINUSE); free it, or ` +
        'set another port with --health-port (KONDUCTOR_HEALTH_PORT) or the health.port option; 0 picks any free port',
    );
  });

  test('stopping a server that never listened resolves and leaves the port to its holder', async () => {
    const port = await started(0).start();
    const failed = server(port);
    await expect(failed.start()).rejects.toThrow(HealthServerError);
    await expect(failed.stop()).resolves.toBeUndefined();
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
  });
});
