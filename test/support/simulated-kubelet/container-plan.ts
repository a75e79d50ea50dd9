import { basename } from 'node:path';
import {
  containerEnv,
  expand,
  rewriteMounts,
  rewriteVolume,
  usesVolumeUnmounted,
  type PodContext,
} from './container-env.js';
import type { ContainerExecutables } from './executables.js';
import type { Container, Pod } from './pod.js';
import { UnrunnablePod } from './unrunnable-pod.js';

/** Kubernetes' default `failureThreshold` of a probe, for a container whose readinessProbe gives none. */
export const DEFAULT_FAILURE_THRESHOLD = 3;

/** A container, ready to spawn: the local executable, rewritten arguments and the environment. */
export interface ContainerPlan {
  name: string;
  image: string;
  file: string;
  args: string[];
  env: Record<string, string>;
  /**
   * Failed probes in a row before a ready container is reported not ready: its readinessProbe's
   * `failureThreshold`, as a kubelet reads it. A single failure of `/health` is what an election looks
   * like (a leader restarting during an upgrade), not a member that stopped serving.
   */
  readinessFailureThreshold: number;
  /** The client certificate, key and CA its readinessProbe's `etcdctl` presents (local paths), when it names them. */
  probeTLS?: { cert: string; key: string; ca: string };
}

/** A Pod's containers, unread: its init containers and the first container, the one a member runs. */
export interface PodContainers {
  inits: unknown[];
  main: unknown;
}

/** The Pod's init containers and first container; throws {@link UnrunnablePod} when the lists are malformed. */
export function podContainers(pod: Pod): PodContainers {
  const containers = pod.spec?.containers;
  if (!Array.isArray(containers) || containers.length === 0)
    throw new UnrunnablePod('spec.containers is empty');
  const inits = pod.spec?.initContainers ?? [];
  if (!Array.isArray(inits)) throw new UnrunnablePod('spec.initContainers is not a list');
  return { inits, main: containers[0] };
}

/** Reads one container into a plan; throws {@link UnrunnablePod} for what cannot run here. */
export function planContainer(
  value: unknown,
  where: string,
  context: PodContext,
  executables: ContainerExecutables,
): ContainerPlan {
  if (typeof value !== 'object' || value === null)
    throw new UnrunnablePod(`${where} is not an object`);
  const container = value as Container;
  const name = typeof container.name === 'string' ? container.name : '';
  const image = typeof container.image === 'string' ? container.image : '';
  if (!name) throw new UnrunnablePod(`${where} has no name`);
  const command = stringList(container.command, `${where}.command`);
  const args = stringList(container.args, `${where}.args`);
  // Without a command a kubelet runs the image's entrypoint, which a local runner cannot know.
  if (command.length === 0)
    throw new UnrunnablePod(
      `${where} (${name}) has no command; image entrypoints are unknown to the pod runner`,
    );
  if (usesVolumeUnmounted([...command, ...args], container.volumeMounts)) {
    throw new UnrunnablePod(
      `${where} (${name}) uses /var/etcd without mounting it: on a kubelet it would see an empty folder of its own`,
    );
  }
  const env = containerEnv(container.env, `${where}.env`, context);
  const rewrite = (word: string): string =>
    rewriteMounts(rewriteVolume(expand(word, env), context.dir), context.mounts);
  const words = [...command, ...args].map(rewrite);
  const program = words[0] as string;
  const file = executables.find(program);
  if (!file)
    throw new UnrunnablePod(
      `${where} (${name}): executable ${basename(program)} not found on PATH`,
    );
  const probeTLS = probeCertificates(container.readinessProbe, rewrite);
  return {
    name,
    image,
    file,
    args: words.slice(1),
    env,
    readinessFailureThreshold: failureThreshold(container.readinessProbe),
    ...(probeTLS ? { probeTLS } : {}),
  };
}

/** A readinessProbe's `failureThreshold`; Kubernetes' default when it gives no positive whole number. */
function failureThreshold(probe: unknown): number {
  const value =
    typeof probe === 'object' && probe !== null
      ? (probe as { failureThreshold?: unknown }).failureThreshold
      : undefined;
  return typeof value === 'number' && Number.isInteger(value) && value > 0
    ? value
    : DEFAULT_FAILURE_THRESHOLD;
}

/** The `--cert`, `--key` and `--cacert` an exec readinessProbe's `etcdctl` passes, rewritten to local paths; undefined unless all three are there. */
function probeCertificates(
  probe: unknown,
  rewrite: (word: string) => string,
): ContainerPlan['probeTLS'] {
  const command = (probe as { exec?: { command?: unknown } } | undefined)?.exec?.command;
  if (!Array.isArray(command)) return undefined;
  const line = command
    .filter((word): word is string => typeof word === 'string')
    .map(rewrite)
    .join(' ');
  const flag = (name: string): string | undefined =>
    new RegExp(`--${name}[= ]([^\\s'"]+)`).exec(line)?.[1];
  const [cert, key, ca] = [flag('cert'), flag('key'), flag('cacert')];
  return cert && key && ca ? { cert, key, ca } : undefined;
}

function stringList(value: unknown, where: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((v): v is string => typeof v === 'string'))
    throw new UnrunnablePod(`${where} is not a list of strings`);
  return value;
}

/** A flag's value in the container's command line (`--flag=value` or `--flag value`, also inside `sh -c`), or `ETCD_<FLAG>`. */
export function flagValue(plan: ContainerPlan, flag: string): string | undefined {
  const line = plan.args.join(' ');
  const escaped = flag.replace(/[-]/g, '\\-');
  const match = new RegExp(`(?:^|\\s)--?${escaped}(?:=|\\s+)['"]?([^\\s'"]+)`).exec(line);
  return match?.[1] ?? plan.env[`ETCD_${flag.toUpperCase().replace(/-/g, '_')}`];
}

export function firstURL(list: string | undefined): string | undefined {
  return list
    ?.split(',')
    .map((url) => url.trim())
    .find(Boolean);
}
