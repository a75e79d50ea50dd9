import type { ReadinessAnswer } from './readiness-wait.js';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

/**
 * One GET against a test control plane's own process; resolves with the HTTP status, or rejects on a
 * connection error or after `timeoutMs`. Self-signed TLS is accepted: the plane's processes made their
 * certificates themselves.
 */
export function probe(url: string, token?: string, timeoutMs = 2_000): Promise<number> {
  return new Promise((resolve, reject) => {
    const send = url.startsWith('https:') ? httpsRequest : httpRequest;
    const req = send(
      url,
      {
        method: 'GET',
        timeout: timeoutMs,
        rejectUnauthorized: false,
        agent: false,
        headers: token ? { Authorization: `Bearer ${token}` } : {},
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/**
 * A readiness check of `url` for `ManagedProcess.start`: ready on 200; otherwise it says what it
 * saw (the status, or the connection error), so a start that never gets ready names its last answer.
 */
export function readinessCheck(url: string, token?: string): () => Promise<ReadinessAnswer> {
  const path = new URL(url).pathname;
  return () =>
    probe(url, token).then(
      (status) => ({ ready: status === 200, seen: `GET ${path} answered ${status}` }),
      (error: unknown) => ({
        ready: false,
        seen: `GET ${path} failed: ${error instanceof Error ? error.message : String(error)}`,
      }),
    );
}
