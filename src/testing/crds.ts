import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ApiextensionsV1Api,
  loadAllYaml,
  type KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';

/** Reads every CRD in YAML files (a file or a folder of `.yaml`/`.yml` files). */
export function readCrds(path: string): V1CustomResourceDefinition[] {
  const files = statSync(path).isDirectory()
    ? readdirSync(path)
        .filter((f) => /\.ya?ml$/.test(f))
        .sort()
        .map((f) => join(path, f))
    : [path];
  return files
    .flatMap((file) => loadAllYaml(readFileSync(file, 'utf8')) as V1CustomResourceDefinition[])
    .filter((doc) => doc?.kind === 'CustomResourceDefinition');
}

/**
 * Creates or replaces CRDs and waits until each is Established, so custom objects can be created at once.
 * Throws naming the CRD when one is rejected or never becomes Established.
 */
export async function installCrds(
  kc: KubeConfig,
  crds: readonly V1CustomResourceDefinition[],
  timeoutMs = 20_000,
): Promise<void> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  for (const crd of crds) {
    const name = crd.metadata?.name ?? '(unnamed)';
    try {
      await api.createCustomResourceDefinition({ body: crd });
    } catch (error) {
      if ((error as { code?: number }).code !== 409)
        throw new Error(`installing CRD ${name} failed: ${String(error)}`);
      const current = await api.readCustomResourceDefinition({ name });
      await api.replaceCustomResourceDefinition({
        name,
        body: {
          ...crd,
          metadata: { ...crd.metadata, resourceVersion: current.metadata?.resourceVersion },
        },
      });
    }
  }
  for (const crd of crds) {
    const name = crd.metadata?.name ?? '';
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const current = await api.readCustomResourceDefinition({ name });
      if (current.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'))
        break;
      if (Date.now() > deadline)
        throw new Error(`CRD ${name} was not Established within ${timeoutMs} ms`);
      await sleep(50);
    }
  }
}
