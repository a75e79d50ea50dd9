// Writes keys to etcd through one client URL (a Service address) until a stop file appears, one write
// in flight at a time, and prints what happened as one JSON object on stdout. Runs inside the node's
// network namespace (NodeCluster.runInNode), where Service addresses exist; uses etcd's JSON gateway
// (/v3/kv/put, in 3.4 and 3.5), so it needs nothing but Node.
//
//   node etcd-writer.mjs <client URL> <key prefix> <stop file>
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const [url, prefix, stopFile] = process.argv.slice(2);
if (!url || !prefix || !stopFile) {
  process.stderr.write('usage: etcd-writer.mjs <client URL> <key prefix> <stop file>\n');
  process.exit(2);
}
const b64 = (text) => Buffer.from(text).toString('base64');

/** Completion times (ms since the epoch) of acknowledged writes, and the keys they wrote. */
const acked = [];
const failures = [];
let attempts = 0;
let next = 0;
while (!existsSync(stopFile)) {
  const key = `${prefix}${String(next).padStart(6, '0')}`;
  attempts += 1;
  try {
    const response = await fetch(`${url}/v3/kv/put`, {
      method: 'POST',
      body: JSON.stringify({ key: b64(key), value: b64(key) }),
      signal: AbortSignal.timeout(1_000),
    });
    const body = await response.text();
    if (!response.ok) throw new Error(`HTTP ${response.status}: ${body.slice(0, 200)}`);
    acked.push({ key, at: Date.now() });
    next += 1;
  } catch (error) {
    // The same key again: a write that timed out may have landed, which the final read tolerates.
    if (failures.length < 200) failures.push({ at: Date.now(), error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
    await sleep(50);
    continue;
  }
  await sleep(50);
}
process.stdout.write(`${JSON.stringify({ attempts, acked, failures })}\n`);
