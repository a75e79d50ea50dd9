import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { loadAll } from 'js-yaml';
import { ApiClient } from '../framework/api/api-client.js';
import { ApiError } from '../framework/api/api-error.js';
import { discoverResource } from '../framework/api/discovery.js';
import type { KubeObject } from '../framework/objects/kube-object.js';
import { collectionPath, objectPath } from '../framework/api/resource.js';

/**
 * Reads every object from YAML files (a file, or a folder's `*.yaml`/`*.yml`, sorted by name), as
 * written: client-node's `loadAllYaml` maps documents onto its models, which renames keys such as
 * `enum` and `x-kubernetes-preserve-unknown-fields` and would send the server something else.
 */
export function readManifests(path: string): KubeObject[] {
  const files = statSync(path).isDirectory()
    ? readdirSync(path)
        .filter((f) => /\.ya?ml$/.test(f))
        .sort()
        .map((f) => join(path, f))
    : [path];
  return files.flatMap((file) =>
    (loadAll(readFileSync(file, 'utf8')) as unknown[])
      .filter(Boolean)
      .map((doc) => doc as KubeObject),
  );
}

/**
 * Creates the objects, or replaces those that exist (like a simple `kubectl apply`), resolving each
 * kind through discovery. Throws naming the object when the server rejects it.
 */
export async function applyManifests(
  kc: KubeConfig,
  objects: readonly KubeObject[],
): Promise<void> {
  const client = new ApiClient(kc);
  try {
    for (const object of objects) {
      const name = object.metadata?.name ?? '';
      const what = `${object.kind}/${name}`;
      const resource = await discoverResource(client, {
        apiVersion: object.apiVersion ?? '',
        name: object.kind ?? '',
      });
      const namespace = resource.namespaced ? (object.metadata?.namespace ?? 'default') : undefined;
      try {
        await client.request('POST', collectionPath(resource, namespace), { body: object });
      } catch (error) {
        if (!(error instanceof ApiError && error.status === 409))
          throw new Error(`applying ${what} failed: ${String(error)}`);
        const current = await client.request<KubeObject>(
          'GET',
          objectPath(resource, namespace, name),
        );
        await client.request('PUT', objectPath(resource, namespace, name), {
          body: {
            ...object,
            metadata: { ...object.metadata, resourceVersion: current.metadata?.resourceVersion },
          },
        });
      }
    }
  } finally {
    client.close();
  }
}
