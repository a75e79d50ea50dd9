import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One health check: ok, or not with a reason a person can act on. */
export interface HealthCheck {
  name: string;
  check(): { ok: true } | { ok: false; reason: string };
}

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
}

/**
 * `/healthz` (alive, nothing stalled), `/readyz` (initial listings done, leadership known) and
 * `/metrics` on one small HTTP server. Failing checks answer 503 with one line per reason.
 */
export class HealthServer {
  private server: Server | undefined;

  constructor(private readonly options: HealthServerOptions) {}

  /** Starts listening; resolves with the port. */
  start(): Promise<number> {
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      const answer = (status: number, body: string, type = 'text/plain; charset=utf-8'): void => {
        res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store' });
        res.end(body);
      };
      if (req.method !== 'GET' && req.method !== 'HEAD') return answer(405, 'method not allowed\n');
      if (path === '/healthz' || path === '/livez') return answer(...this.evaluate(this.options.liveness));
      if (path === '/readyz') return answer(...this.evaluate(this.options.readiness));
      if (path === '/metrics') {
        this.options.metrics().then(
          (text) => answer(200, text, this.options.metricsContentType ?? 'text/plain; version=0.0.4; charset=utf-8'),
          (error: unknown) => answer(500, `metrics unavailable: ${error instanceof Error ? error.message : String(error)}\n`),
        );
        return;
      }
      answer(404, 'not found: try /healthz, /readyz or /metrics\n');
    });
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, this.options.host ?? '0.0.0.0', () => resolve((server.address() as AddressInfo).port));
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
    const failures: string[] = [];
    for (const check of checks) {
      const result = check.check();
      if (!result.ok) failures.push(`${check.name}: ${result.reason}`);
    }
    return failures.length === 0 ? [200, 'ok\n'] : [503, `${failures.join('\n')}\n`];
  }
}
