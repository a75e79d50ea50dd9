import { redactToken } from './backup-server.js';
import { SEED_ATTEMPT_ANNOTATION } from './restore-annotations.js';

/** The parts of a dead seed Pod that say when and why it failed. */
export interface DeadSeed {
  metadata?: { name?: string; annotations?: Record<string, string>; creationTimestamp?: string };
  status?: {
    reason?: string;
    message?: string;
    initContainerStatuses?: ContainerStatus[];
    containerStatuses?: ContainerStatus[];
  };
}

interface ContainerStatus {
  name?: string;
  state?: { terminated?: { exitCode?: number; reason?: string; finishedAt?: string } };
}

const FIRST_DELAY_MS = 5_000;
const MAX_DELAY_MS = 5 * 60_000;
const MAX_ATTEMPT = 1_000;

/** Which attempt a seed Pod was (its annotation; 1 when absent or not a sane number). */
export function seedAttempt(pod: DeadSeed): number {
  const value = Number(pod.metadata?.annotations?.[SEED_ATTEMPT_ANNOTATION]);
  return Number.isInteger(value) && value >= 1 && value <= MAX_ATTEMPT ? value : 1;
}

/** How long to wait after the failure of seed attempt `attempt` before the next: 5 s, doubling, at most 5 minutes. */
export function seedRetryDelayMs(attempt: number): number {
  return Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.min(Math.max(attempt, 1) - 1, 16));
}

/** When the seed stopped: the latest `finishedAt` of its containers, else its creation; undefined when neither parses. */
export function seedFailedAt(pod: DeadSeed): number | undefined {
  const times = [
    ...(pod.status?.initContainerStatuses ?? []),
    ...(pod.status?.containerStatuses ?? []),
  ]
    .map((s) => Date.parse(s.state?.terminated?.finishedAt ?? ''))
    .filter((t) => !Number.isNaN(t));
  if (times.length > 0) return Math.max(...times);
  const created = Date.parse(pod.metadata?.creationTimestamp ?? '');
  return Number.isNaN(created) ? undefined : created;
}

/** What went wrong, in a few words, without anything the Pod printed that could hold a download token. */
export function seedFailure(pod: DeadSeed): string {
  const failed = [
    ...(pod.status?.initContainerStatuses ?? []),
    ...(pod.status?.containerStatuses ?? []),
  ].find((s) => (s.state?.terminated?.exitCode ?? 0) !== 0);
  if (failed)
    return `container ${failed.name ?? '?'} exited with code ${failed.state?.terminated?.exitCode}`;
  return redactToken(pod.status?.reason ?? 'the Pod failed');
}
