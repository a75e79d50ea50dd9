import { HealthServer, HealthServerError } from '../../../src/framework/runtime/health-server.js';

function server(port: number): HealthServer {
  return new HealthServer({
    port,
    host: '127.0.0.1',
    liveness: [],
    readiness: [],
    metrics: () => Promise.resolve(''),
  });
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

describe('/healthz with probe handlers', () => {
  const servers: HealthServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.stop()));
  });

  async function healthz(
    probes: { results: Record<string, unknown>; failures: string[] },
    failing = false,
  ): Promise<{ status: number; type: string | null; body: unknown }> {
    const liveness = failing
      ? [{ name: 'watches', check: () => ({ ok: false as const, reason: 'no answer' }) }]
      : [];
    const s = new HealthServer({
      port: 0,
      host: '127.0.0.1',
      liveness,
      readiness: [],
      metrics: () => Promise.resolve(''),
      probes: () => Promise.resolve(probes),
    });
    servers.push(s);
    const response = await fetch(`http://127.0.0.1:${await s.start()}/healthz`);
    return {
      status: response.status,
      type: response.headers.get('content-type'),
      body: await response.json(),
    };
  }

  test('answers JSON with each probe result under its id', async () => {
    expect(await healthz({ results: { depth: 3 }, failures: [] })).toEqual({
      status: 200,
      type: 'application/json',
      body: { status: 'ok', failures: [], probes: { depth: 3 } },
    });
  });

  test('a failed probe or check answers 503, naming each reason', async () => {
    const answer = await healthz(
      { results: { db: { error: 'unreachable' } }, failures: ['probe db: unreachable'] },
      true,
    );
    expect(answer).toMatchObject({
      status: 503,
      body: {
        status: 'failing',
        failures: ['watches: no answer', 'probe db: unreachable'],
        probes: { db: { error: 'unreachable' } },
      },
    });
  });
});
