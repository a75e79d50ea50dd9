import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, type KubeObject, type ResourceClient } from '../../../src/framework/index.js';
import type { Pod } from './pod.js';
import { UnrunnablePod } from './unrunnable-pod.js';

/** A Secret as the simulated kubelet reads it. */
export type Secret = KubeObject & { data?: Record<string, string> };

/** A `secret` volume a container mounts, and the local folder that stands in for it. */
export interface SecretMount {
  volume: string;
  secretName: string;
  /** The path inside the container, e.g. `/etc/etcdtls/member/peer-tls`. */
  mountPath: string;
  /** The folder holding the Secret's files. */
  dir: string;
  /** `secret.items`: only these keys, each at its path; every key when absent. */
  items?: { key: string; path: string }[];
}

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const KEY = /^[-._a-zA-Z0-9]+$/;
const VOLUME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** How often a Pod whose Secret is missing looks again (a kubelet keeps such a Pod in ContainerCreating). */
const MISSING_SECRET_RETRY_MS = 1_000;

/**
 * The `secret` volumes of the Pod that some container mounts, each with a folder under `podDir`.
 * Other volume types (but the member's data `emptyDir`) are not supported; a malformed one is refused.
 */
export function secretMounts(pod: Pod, podDir: string): SecretMount[] {
  const volumes = (pod.spec as { volumes?: unknown } | undefined)?.volumes ?? [];
  if (!Array.isArray(volumes)) throw new UnrunnablePod('spec.volumes is not a list');
  const containers = [...asList(pod.spec?.initContainers), ...asList(pod.spec?.containers)];
  const mounts: SecretMount[] = [];
  for (const volume of volumes as {
    name?: unknown;
    secret?: { secretName?: unknown; items?: unknown };
  }[]) {
    if (volume?.secret === undefined) continue;
    const secretName = volume.secret.secretName;
    if (
      typeof volume.name !== 'string' ||
      !VOLUME.test(volume.name) ||
      typeof secretName !== 'string' ||
      !NAME.test(secretName)
    ) {
      throw new UnrunnablePod(
        `secret volume ${JSON.stringify(volume.name)} needs a DNS-label name and a valid secretName`,
      );
    }
    const items = secretItems(volume.secret.items, volume.name);
    const dir = join(podDir, '.secrets', volume.name);
    for (const container of containers) {
      for (const mount of asList((container as { volumeMounts?: unknown }).volumeMounts) as {
        name?: unknown;
        mountPath?: unknown;
      }[]) {
        if (mount?.name === volume.name && typeof mount.mountPath === 'string')
          mounts.push({
            volume: volume.name,
            secretName,
            mountPath: mount.mountPath,
            dir,
            ...(items ? { items } : {}),
          });
      }
    }
  }
  return mounts;
}

/**
 * Writes each mounted Secret's keys as files into its folder, waiting (as a kubelet does) while a
 * Secret does not exist yet. Resolves false when `signal` aborts first.
 */
export async function writeSecretVolumes(
  secrets: ResourceClient<Secret>,
  namespace: string,
  mounts: readonly SecretMount[],
  signal: AbortSignal,
): Promise<boolean> {
  for (const mount of mounts) {
    let secret: Secret | undefined;
    while (!secret) {
      if (signal.aborted) return false;
      secret = await secrets.get({ namespace, name: mount.secretName }).catch((error: unknown) => {
        if (error instanceof ApiError && error.status === 404) return undefined;
        throw error;
      });
      if (!secret)
        await sleep(MISSING_SECRET_RETRY_MS, undefined, { signal }).catch(() => undefined);
    }
    mkdirSync(mount.dir, { recursive: true });
    const data = secret.data ?? {};
    const files = mount.items ?? Object.keys(data).map((key) => ({ key, path: key }));
    for (const { key, path } of files) {
      if (!KEY.test(key) || key === '.' || key === '..' || data[key] === undefined) continue; // the API server refuses such keys; never a path
      writeFileSync(join(mount.dir, path), Buffer.from(data[key], 'base64'), { mode: 0o600 });
    }
  }
  return true;
}

/** `secret.items` as `{ key, path }` with plain file names as paths (what the etcd Pods use); undefined when absent. */
function secretItems(value: unknown, volume: string): { key: string; path: string }[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value))
    throw new UnrunnablePod(`secret volume ${volume}: items is not a list`);
  return value.map((item: { key?: unknown; path?: unknown }) => {
    if (
      typeof item?.key !== 'string' ||
      typeof item.path !== 'string' ||
      !KEY.test(item.path) ||
      item.path === '.' ||
      item.path === '..'
    ) {
      throw new UnrunnablePod(
        `secret volume ${volume}: each item needs a key and a plain file name as path`,
      );
    }
    return { key: item.key, path: item.path };
  });
}

function asList(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
