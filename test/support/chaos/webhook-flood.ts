import { send, stallRequest } from '../webhook-requests.js';

/** How many requests of each kind a flood made, and how the server answered them (`error`: the connection failed). */
export type FloodCounts = Record<'list' | 'endpoints' | 'stalled', Record<string, number>>;

/** What a flood sends, and from where. */
export interface FloodOptions {
  port: number;
  path: string;
  /** The attacker's address (another loopback address: a Pod, not the API server). */
  localAddress: string;
  /** Bodies declared and sent, in bytes; default just under 8 MiB, the server's default body limit. */
  bodyBytes?: number;
}

const MiB = 1024 * 1024;

/** `[{},{},…]` of `bytes` bytes. */
export function emptyObjectList(bytes: number): Buffer {
  const count = Math.floor((bytes - 2) / 3);
  return Buffer.from(`[${'{},'.repeat(count - 1)}{}]`);
}

/** A well-formed AdmissionReview whose object is Endpoints with as many empty addresses as fit in `bytes`. */
export function endpointsReview(bytes: number): Buffer {
  const head = JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'flood',
      kind: { group: '', version: 'v1', kind: 'Endpoints' },
      resource: { group: '', version: 'v1', resource: 'endpoints' },
      operation: 'CREATE',
      userInfo: { username: 'anyone' },
      object: {
        apiVersion: 'v1',
        kind: 'Endpoints',
        metadata: { name: 'e' },
        subsets: [{ addresses: [] }],
      },
    },
  });
  const [before, after] = head.split('"addresses":[]') as [string, string];
  const room = bytes - before.length - after.length - '"addresses":[]'.length;
  const count = Math.floor((room + 1) / 3);
  return Buffer.from(`${before}"addresses":[${'{},'.repeat(count - 1)}{}]${after}`);
}

/** A body of one long string: few JSON values, so only its bytes and its slowness cost the server. */
function paddedString(bytes: number): Buffer {
  const body = Buffer.alloc(bytes, 0x61);
  body.write('{"padding":"', 0, 'latin1');
  return body;
}

/**
 * Floods a webhook server from one address until `signal` aborts: two loops of `[{},{},…]` bodies
 * and one of an AdmissionReview with millions of empty endpoints (each just under 8 MiB), and two
 * connections that declare 8 MiB, send all but the last byte and wait, reconnecting once closed.
 * Resolves with what the server answered.
 */
export async function floodWebhook(
  options: FloodOptions,
  signal: AbortSignal,
): Promise<FloodCounts> {
  const bytes = options.bodyBytes ?? 8 * MiB - 1024;
  const counts: FloodCounts = { list: {}, endpoints: {}, stalled: {} };
  const count = (kind: keyof FloodCounts, outcome: string): void =>
    void (counts[kind][outcome] = (counts[kind][outcome] ?? 0) + 1);
  const target = { ca: [], insecure: true, localAddress: options.localAddress };
  const repeat = async (kind: 'list' | 'endpoints', body: Buffer): Promise<void> => {
    while (!signal.aborted) {
      const outcome = await send(options.port, options.path, body, target).then(
        (answer) => String(answer.status),
        () => 'error',
      );
      count(kind, outcome);
      // A refused connection (operator gone) must not spin.
      if (outcome === 'error') await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const stall = async (): Promise<void> => {
    const body = paddedString(bytes - 1);
    while (!signal.aborted) {
      const request = stallRequest(options.port, options.path, bytes, body, target);
      const aborted = (): void => request.close();
      signal.addEventListener('abort', aborted, { once: true });
      const { status } = await request.answered;
      signal.removeEventListener('abort', aborted);
      count('stalled', status === 0 ? 'closed' : String(status));
      if (status === 0) await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const list = emptyObjectList(bytes);
  const endpoints = endpointsReview(bytes);
  await Promise.all([
    repeat('list', list),
    repeat('list', list),
    repeat('endpoints', endpoints),
    stall(),
    stall(),
  ]);
  return counts;
}
