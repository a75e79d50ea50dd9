import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ProbeReport } from './probes.js';

/** One health check: ok, or not with a reason a person can act on. @internal */
export interface HealthCheck {
  name: string;
  check(): { ok: true } | { ok: false; reason: string };
}

/** @internal */
export interface HealthServerOptions {
  /** 0 picks a free port. */
  port: number;
  /** Default 0.0.0.0 (probes come from the kubelet); tests use 127.0.0.1. */
  host?: string;
  liveness: readonly HealthCheck[];
  readiness: readonly HealthCheck[];
  /** The Prometheus exposition text for `/metrics`. */
  metrics: () => Promise<string>;
  metricsContentType?: string;
  // lifecycle: probe handlers' results on /healthz.
  /** The probe handlers' results: with it, `/healthz` answers JSON (`status`, `failures`, `probes`). */
  probes?: () => Promise<ProbeReport>;
}

/**
 * The health server could not listen: its port is taken (EADDRINUSE) or not allowed (EACCES). An
 * operator without its probes would be restarted by the kubelet, or, worse, run on unwatched, so this
 * stops the start instead of being logged and passed over.
 */
export class HealthServerError extends Error {
  /** Always `'HealthServerError'`. */
  override readonly name = 'HealthServerError';

  constructor(
    /** The port asked for. */
    readonly port: number,
    /** The address asked for. */
    readonly host: string,
    /** The system error code, e.g. `EADDRINUSE`. */
    readonly code: string | undefined,
    options: { cause: unknown },
  ) {
    super(describeListenError(port, host, code, options.cause), options);
  }
}

/** What went wrong and what to do, in one line. */
function describeListenError(
  port: number,
  host: string,
  code: string | undefined,
  cause: unknown,
): string {
  const where = `the health server cannot listen on ${host}:${port}`;
  const choose =
    'set another port with --health-port (KONDUCTOR_HEALTH_PORT) or the health.port option; 0 picks any free port';
  if (code === 'EADDRINUSE')
    return `${where}: the port is already in use (EADDRINUSE); free it, or ${choose}`;
  if (code === 'EACCES')
    return `${where}: not allowed (EACCES; ports below 1024 need privileges); ${choose}`;
  if (code === 'EADDRNOTAVAIL')
    return `${where}: no such address on this machine (EADDRNOTAVAIL); use another health host`;
  const reason = cause instanceof Error ? cause.message : String(cause);
  return `${where}: ${reason}; ${choose}`;
}

/**
 * `/healthz` (alive, nothing stalled), `/readyz` (initial listings done, leadership known) and
 * `/metrics` on one small HTTP server. Failing checks answer 503 with one line per reason.
 * @internal
 */
export class HealthServer {
  private server: Server | undefined;

  constructor(private readonly options: HealthServerOptions) {}

  /**
   * Starts listening; resolves with the port.
   * @throws {@link HealthServerError} (rejects) when the port is taken or not allowed, naming it and what to do.
   */
  start(): Promise<number> {
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      const answer = (status: number, body: string, type = 'text/plain; charset=utf-8'): void => {
        res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store' });
        res.end(body);
      };
      if (req.method !== 'GET' && req.method !== 'HEAD') return answer(405, 'method not allowed\n');
      if ((path === '/healthz' || path === '/livez') && this.options.probes) {
        const failures = this.failures(this.options.liveness);
        this.options.probes().then(
          (report) => answer(...healthJson(failures, report), 'application/json'),
          (error: unknown) =>
            answer(
              ...healthJson(failures, {
                results: {},
                failures: [`probes: ${error instanceof Error ? error.message : String(error)}`],
              }),
              'application/json',
            ),
        );
        return;
      }
      if (path === '/healthz' || path === '/livez')
        return answer(...this.evaluate(this.options.liveness));
      if (path === '/readyz') return answer(...this.evaluate(this.options.readiness));
      if (path === '/metrics') {
        this.options.metrics().then(
          (text) =>
            answer(
              200,
              text,
              this.options.metricsContentType ?? 'text/plain; version=0.0.4; charset=utf-8',
            ),
          (error: unknown) =>
            answer(
              500,
              `metrics unavailable: ${error instanceof Error ? error.message : String(error)}\n`,
            ),
        );
        return;
      }
      answer(404, 'not found: try /healthz, /readyz or /metrics\n');
    });
    this.server = server;
    const host = this.options.host ?? '0.0.0.0';
    return new Promise((resolve, reject) => {
      server.once('error', (error: NodeJS.ErrnoException) => {
        // Never listened: nothing to close, and stop() has nothing to do.
        if (!server.listening && this.server === server) this.server = undefined;
        reject(new HealthServerError(this.options.port, host, error.code, { cause: error }));
      });
      server.listen(this.options.port, host, () => resolve((server.address() as AddressInfo).port));
    });
  }

  stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return Promise.resolve();
    server.closeAllConnections?.();
    return new Promise((resolve) => server.close(() => resolve()));
  }

  private evaluate(checks: readonly HealthCheck[]): [number, string] {
    const failures = this.failures(checks);
    return failures.length === 0 ? [200, 'ok\n'] : [503, `${failures.join('\n')}\n`];
  }

  private failures(checks: readonly HealthCheck[]): string[] {
    const failures: string[] = [];
    for (const check of checks) {
      const result = check.check();
      if (!result.ok) failures.push(`${check.name}: ${result.reason}`);
    }
    return failures;
  }
}

/** `/healthz` with probes: 503 when a check or a probe failed; the same reason lines as the text body, and each probe's result by id. */
function healthJson(checkFailures: readonly string[], report: ProbeReport): [number, string] {
  const failures = [...checkFailures, ...report.failures];
  const body = {
    status: failures.length === 0 ? 'ok' : 'failing',
    failures,
    probes: report.results,
  };
  return [failures.length === 0 ? 200 : 503, `${JSON.stringify(body)}\n`];
}
