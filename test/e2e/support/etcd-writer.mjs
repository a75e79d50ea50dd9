// Writes keys to etcd through one client URL (a Service address) until a stop file appears, one write
// in flight at a time, and prints what happened as one JSON object on stdout. Runs inside the node's
// network namespace (NodeCluster.runInNode), where Service addresses exist; uses etcd's JSON gateway
// (/v3/kv/put, in 3.4 and 3.5), so it needs nothing but Node. For a cluster that serves TLS, give a
// folder holding client.crt, client.key and ca.crt, and the name the server certificate carries (the
// URL is a Service address, which the certificate does not name).
//
//   node etcd-writer.mjs <client URL> <key prefix> <stop file> [<TLS folder> <server name>]
import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const [url, prefix, stopFile, tlsDir, serverName] = process.argv.slice(2);
if (!url || !prefix || !stopFile || (tlsDir && !serverName)) {
  process.stderr.write(
    'usage: etcd-writer.mjs <client URL> <key prefix> <stop file> [<TLS folder> <server name>]\n',
  );
  process.exit(2);
}
const b64 = (text) => Buffer.from(text).toString('base64');
const tls = tlsDir
  ? {
      cert: readFileSync(join(tlsDir, 'client.crt')),
      key: readFileSync(join(tlsDir, 'client.key')),
      ca: readFileSync(join(tlsDir, 'ca.crt')),
      servername: serverName,
    }
  : undefined;

/** One POST; resolves with the status and body. */
function post(path, body) {
  if (!tls) {
    return fetch(`${url}${path}`, {
      method: 'POST',
      body,
      signal: AbortSignal.timeout(1_000),
    }).then(async (response) => ({ status: response.status, text: await response.text() }));
  }
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      { method: 'POST', agent: false, timeout: 1_000, ...tls },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

/** Completion times (ms since the epoch) of acknowledged writes, and the keys they wrote. */
const acked = [];
const failures = [];
let attempts = 0;
let next = 0;
while (!existsSync(stopFile)) {
  const key = `${prefix}${String(next).padStart(6, '0')}`;
  attempts += 1;
  try {
    const response = await post('/v3/kv/put', JSON.stringify({ key: b64(key), value: b64(key) }));
    if (response.status < 200 || response.status > 299)
      throw new Error(`HTTP ${response.status}: ${response.text.slice(0, 200)}`);
    acked.push({ key, at: Date.now() });
    next += 1;
  } catch (error) {
    // The same key again: a write that timed out may have landed, which the final read tolerates.
    if (failures.length < 200)
      failures.push({
        at: Date.now(),
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      });
    await sleep(50);
    continue;
  }
  await sleep(50);
}
process.stdout.write(`${JSON.stringify({ attempts, acked, failures })}\n`);
