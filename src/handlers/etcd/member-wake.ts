import type { KubeObject, Memo } from 'konductor';

/** The key of the cluster's {@link MemberWake} in its `ctx.memo` (shared by the daemon and the owned handler). */
const MEMO_KEY = 'etcdMemberWake';

/**
 * Wakes a cluster's daemon when one of its member Pods dies, so the cluster reacts at once instead
 * of at its next periodic look. A wake that comes while the daemon is busy is kept, so the daemon's
 * next wait returns at once: a death seen in the middle of a step is never lost.
 */
export class MemberWake {
  private pending = false;
  private waiters: (() => void)[] = [];

  /** Called by the owned handler: a member died. */
  wake(): void {
    this.pending = true;
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Whether a wake came since the last call (and forgets it). */
  take(): boolean {
    const pending = this.pending;
    this.pending = false;
    return pending;
  }

  /** Resolves on the next wake (at once if one is pending), or when `signal` aborts. */
  next(signal: AbortSignal): Promise<void> {
    if (this.pending || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        signal.removeEventListener('abort', done);
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve();
      };
      this.waiters.push(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}

/** The cluster's wake, made on first use in its memo. */
export function memberWake(memo: Memo): MemberWake {
  const existing = memo[MEMO_KEY];
  if (existing instanceof MemberWake) return existing;
  const wake = new MemberWake();
  memo[MEMO_KEY] = wake;
  return wake;
}

interface PodView {
  metadata?: { deletionTimestamp?: string };
  status?: { phase?: string; containerStatuses?: { name?: string; state?: { terminated?: unknown } }[] };
}

/**
 * Whether a member Pod's change shows its member is gone: the Pod deleted (or being deleted), failed
 * or finished, or its etcd container terminated. Other changes (readiness, a new Pod starting) wait
 * for the daemon's own look.
 */
export function memberDied(event: 'ADDED' | 'MODIFIED' | 'DELETED', pod: KubeObject): boolean {
  if (event === 'DELETED') return true;
  const view = pod as PodView;
  if (view.metadata?.deletionTimestamp) return true;
  const phase = view.status?.phase;
  if (phase === 'Failed' || phase === 'Succeeded') return true;
  return (view.status?.containerStatuses ?? []).some((c) => c.name === 'etcd' && c.state?.terminated !== undefined);
}
