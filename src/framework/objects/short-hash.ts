import { createHash } from 'node:crypto';

/** Eight hex digits of the SHA-256 of `raw`: what keeps a name cut to fit a Kubernetes limit unique. */
export function shortHash(raw: string): string {
  return createHash('sha256').update(raw).digest('hex').slice(0, 8);
}
