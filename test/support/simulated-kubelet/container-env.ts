import { LOCALHOST, type EnvVar, type Pod } from './pod.js';
import { UnrunnablePod } from './unrunnable-pod.js';

/** The volume mount path of the etcd Pods, replaced by the Pod's folder in every argument. */
const VOLUME_PATH = '/var/etcd';
/** The volume path where it starts a path: at the start, after `=`, a blank, a quote, a comma... */
const VOLUME_PATTERN = pathPattern(VOLUME_PATH);

/** `path` where it starts a path in a word: at the start, after `=`, a blank, a quote, a comma...; group 1 is what precedes it. */
function pathPattern(path: string): RegExp {
  return new RegExp(
    `(^|[=\\s'":,;(])${path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}(?=$|[/\\s'":,;)])`,
    'g',
  );
}

/** What a container's words and environment are resolved against: its Pod, the Pod's folder and its Secret volumes' folders. */
export interface PodContext {
  pod: Pod;
  dir: string;
  /** Mount paths (`/etc/etcdtls/...`) and the folders standing in for them. */
  mounts?: readonly { mountPath: string; dir: string }[];
}

/**
 * The container's environment: PATH and HOME so programs run at all, then its `env` with `$(VAR)`
 * references expanded and the volume path rewritten. Of `valueFrom`, only Pod fields are supported.
 */
export function containerEnv(
  value: unknown,
  where: string,
  context: PodContext,
): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: context.dir,
    HOSTNAME: context.pod.metadata?.name ?? '',
  };
  if (value === undefined || value === null) return env;
  if (!Array.isArray(value)) throw new UnrunnablePod(`${where} is not a list`);
  for (const [i, entry] of (value as EnvVar[]).entries()) {
    if (typeof entry?.name !== 'string' || !entry.name)
      throw new UnrunnablePod(`${where}[${i}] has no name`);
    if (entry.valueFrom !== undefined) {
      const field = entry.valueFrom.fieldRef?.fieldPath;
      const resolved = typeof field === 'string' ? podField(context.pod, field) : undefined;
      if (resolved === undefined) {
        throw new UnrunnablePod(
          `${where}[${i}] (${entry.name}): only valueFrom.fieldRef of metadata.name/namespace/uid, status.podIP/hostIP and spec.nodeName is supported`,
        );
      }
      env[entry.name] = resolved;
    } else {
      env[entry.name] = rewriteVolume(
        expand(typeof entry.value === 'string' ? entry.value : '', env),
        context.dir,
      );
    }
  }
  return env;
}

function podField(pod: Pod, path: string): string | undefined {
  switch (path) {
    case 'metadata.name':
      return pod.metadata?.name ?? '';
    case 'metadata.namespace':
      return pod.metadata?.namespace ?? '';
    case 'metadata.uid':
      return pod.metadata?.uid ?? '';
    case 'status.podIP':
    case 'status.hostIP':
      return LOCALHOST;
    case 'spec.nodeName':
      return 'localhost';
    default:
      return undefined;
  }
}

/** Kubernetes' `$(VAR)` expansion in command, args and env values; `$$` escapes, unknown names stay as written. */
export function expand(text: string, env: Record<string, string>): string {
  return text.replace(
    /\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g,
    (match, name: string | undefined) => {
      if (name === undefined) return '$';
      return env[name] ?? match;
    },
  );
}

/**
 * Whether a container reads or writes the volume path without mounting it. A kubelet would give such
 * a container its own filesystem, lost when it exits; the pod runner's folder would hide that, so
 * such a Pod is refused as unrunnable instead.
 */
export function usesVolumeUnmounted(words: readonly string[], volumeMounts: unknown): boolean {
  const mounted =
    Array.isArray(volumeMounts) &&
    volumeMounts.some(
      (m) =>
        typeof m === 'object' &&
        m !== null &&
        (m as { mountPath?: unknown }).mountPath === VOLUME_PATH,
    );
  return !mounted && words.some((word) => new RegExp(VOLUME_PATTERN.source).test(word));
}

/** Replaces the volume path where it starts a path (whole word, after `=`, a quote, a comma...) by the Pod's folder. */
export function rewriteVolume(text: string, dir: string): string {
  return text.replace(VOLUME_PATTERN, (_match, before: string) => `${before}${dir}`);
}

/** Replaces each mount path where it starts a path by the folder standing in for it. */
export function rewriteMounts(
  text: string,
  mounts: readonly { mountPath: string; dir: string }[] = [],
): string {
  let result = text;
  for (const mount of mounts) {
    result = result.replace(
      pathPattern(mount.mountPath.replace(/\/+$/, '')),
      (_match, before: string) => `${before}${mount.dir}`,
    );
  }
  return result;
}
