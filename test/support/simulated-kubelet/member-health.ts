import { probe } from '../../../src/testing/probe.js';

const PROBE_TIMEOUT_MS = 1_000;

/** One `GET <clientURL>/health`; true for HTTP 200 (etcd answers 503 while it has no leader), false for any other answer or none. */
export function probeHealth(clientURL: string): Promise<boolean> {
  const url = `${clientURL.replace(/\/+$/, '')}/health`;
  return probe(url, undefined, PROBE_TIMEOUT_MS).then(
    (status) => status === 200,
    () => false,
  );
}
