import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { probe } from '../../../src/testing/probe.js';

const PROBE_TIMEOUT_MS = 1_000;

/** Files of a client certificate, its key and the CA to trust, as a readinessProbe's `etcdctl` names them. */
export interface ProbeCertificates {
  cert: string;
  key: string;
  ca: string;
}

/**
 * One `GET <clientURL>/health`; true for HTTP 200 (etcd answers 503 while it has no leader), false for
 * any other answer or none. With `tls`, over https presenting that certificate and trusting only that
 * CA, as the member's `etcdctl` readinessProbe would (the server name is not checked: the probe dials
 * the member's own address).
 */
export function probeHealth(clientURL: string, tls?: ProbeCertificates): Promise<boolean> {
  const url = `${clientURL.replace(/\/+$/, '')}/health`;
  if (!tls || !url.startsWith('https:')) {
    return probe(url, undefined, PROBE_TIMEOUT_MS).then(
      (status) => status === 200,
      () => false,
    );
  }
  return new Promise((resolve) => {
    let files: { cert: Buffer; key: Buffer; ca: Buffer };
    try {
      files = {
        cert: readFileSync(tls.cert),
        key: readFileSync(tls.key),
        ca: readFileSync(tls.ca),
      };
    } catch {
      resolve(false);
      return;
    }
    const req = request(
      url,
      {
        method: 'GET',
        timeout: PROBE_TIMEOUT_MS,
        agent: false,
        ...files,
        checkServerIdentity: () => undefined,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(false));
    req.end();
  });
}
