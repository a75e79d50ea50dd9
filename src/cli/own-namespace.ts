// The namespace the CLI runs in when it runs in a pod: what `konductor run` takes for the operator's
// own namespace (its Lease's), and what `disconnect` and `uninstall` look for that Lease in.
import { readFileSync } from 'node:fs';

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** In a pod, its own namespace (the ServiceAccount mount says); elsewhere undefined. */
export function podNamespace(file = SERVICE_ACCOUNT_NAMESPACE): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
