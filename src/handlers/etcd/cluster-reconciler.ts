import { randomUUID } from 'node:crypto';
import {
  events,
  type ApiClient,
  type KubeObject,
  type Logger,
  type ResourceClient,
} from 'konductor';
import { memberClientURL, type EtcdAddresses, type MemberURLs } from './addresses.js';
import { clearCondition, restoreCondition, setCondition } from './conditions.js';
import { ClusterServices } from './cluster-services.js';
import { DisasterRecovery } from './disaster-recovery.js';
import { quorumKept, quorumLost, recoveryClockRuns } from './restore-policy.js';
import { quorum, readClusterSpec, type ClusterSpec } from './cluster-spec.js';
import {
  errorMessage,
  isTransientMembershipError,
  withEtcd,
  type EtcdClient,
  type Member,
} from './etcd-client.js';
import {
  memberLabels,
  memberPod,
  newMemberName,
  runsOlderImage,
  TLS_DIGEST_ANNOTATION,
  TLS_MODE_ANNOTATION,
  type ClusterOwner,
} from './member-pod.js';
import { NO_TLS, securedURLs, tlsMode, tlsModeChangeProblem } from './tls-policy.js';
import { ClusterTLSCache } from './tls-secrets.js';
import {
  RESTORE_FROM_ANNOTATION,
  restoreSourceProblem,
  SEED_ATTEMPT_ANNOTATION,
} from './restore-annotations.js';
import {
  seedAttempt,
  seedFailedAt,
  seedFailure,
  seedRetryDelayMs,
  type DeadSeed,
} from './seed-retry.js';
import type { EtcdClusterSpec, EtcdClusterStatus, ObjectRef } from './types.js';

export type EtcdClusterObject = KubeObject & {
  spec?: Partial<EtcdClusterSpec>;
  status?: EtcdClusterStatus;
};

interface Pod extends KubeObject {
  metadata: NonNullable<KubeObject['metadata']> & {
    name: string;
    annotations?: Record<string, string>;
    ownerReferences?: { uid?: string; controller?: boolean }[];
  };
  spec?: { containers?: { name: string; image?: string }[] };
  status?: {
    phase?: string;
    podIP?: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: { name?: string; image?: string }[];
  } & DeadSeed['status'];
}

export interface ReconcilerOptions {
  client: ApiClient;
  addresses: EtcdAddresses;
  logger: Logger;
  /** How long TLS Secrets read once are used; default 30 s. */
  tlsRefreshMs?: number;
}

/** What one look at a cluster did; `busy` means a step is under way, so look again soon. */
export interface TickOutcome {
  status: EtcdClusterStatus;
  busy: boolean;
  /** Look again after this many ms at the latest (disaster recovery's deadline). */
  nextLookMs?: number;
}

const isReady = (pod: Pod): boolean =>
  pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const phaseOf = (pod: Pod): string => pod.status?.phase ?? 'Pending';

/**
 * The cluster controller of the original operator as one idempotent step, run over and over:
 * it reads Pods and the etcd member list every time (nothing kept in memory, so a restarted
 * operator carries on), and changes at most one member per step.
 */
export class ClusterReconciler {
  /** Failed seed Pods already reported, so each gets one Event. */
  private readonly reportedSeeds = new Set<string>();
  /**
   * The standing problems reported since the cluster was last healthy. `status.reason` alone is not
   * enough: a step in between (a member list that failed), or a second problem reported in the same
   * step (lost quorum, and no backup to restore), overwrites it while the first still stands.
   */
  private readonly warned = new Set<string>();

  private readonly podsApi: ResourceClient<Pod>;
  private readonly services: ClusterServices;
  private readonly recovery: DisasterRecovery;
  /** The cluster's TLS Secrets; the step in progress dials with their credentials. */
  private readonly tls: ClusterTLSCache;
  /** The spec the step in progress works for, with the TLS its members run with. */
  private spec: ClusterSpec | undefined;
  /** The TLS mode disagreement last reported, so it is reported once. */
  private tlsModeWarning: string | undefined;

  constructor(private readonly options: ReconcilerOptions) {
    this.podsApi = options.client.resource<Pod>('v1', 'pods');
    this.services = new ClusterServices(options.client);
    this.recovery = new DisasterRecovery(options.client, options.logger);
    this.tls = new ClusterTLSCache(options.client, options.tlsRefreshMs);
  }

  async step(cluster: EtcdClusterObject): Promise<TickOutcome> {
    const meta = cluster.metadata!;
    const ref: ObjectRef = { name: meta.name!, namespace: meta.namespace!, uid: meta.uid! };
    const owner = cluster as ClusterOwner;
    const status: EtcdClusterStatus = structuredClone(cluster.status ?? {});
    const read = readClusterSpec(cluster.spec);
    if ('problems' in read) {
      const message = read.problems.join('; ');
      this.warnOnce(
        cluster,
        status,
        'InvalidSpec',
        message,
        `${message}. Nothing was changed; fix the spec to continue.`,
      );
      status.reason = message;
      status.conditions = setCondition(status.conditions, {
        type: 'Valid',
        status: 'False',
        reason: 'InvalidSpec',
        message,
      });
      return { status, busy: false };
    }
    status.conditions = restoreCondition(status.conditions, {
      type: 'Valid',
      reason: 'SpecValid',
      message: 'the spec is valid',
    });
    status.controlPaused = read.spec.paused;
    if (read.spec.paused) return { status, busy: false };

    const pods = await this.pods(ref);
    const spec = this.withRunningTLS(cluster, status, read.spec, pods);
    if (!spec) return { status, busy: false };
    this.spec = spec;
    const tlsProblem = await this.tls.refresh(ref.namespace, spec.tls);
    if (tlsProblem) {
      const message = `${tlsProblem}. No member is created or changed until it is fixed`;
      this.warnOnce(cluster, status, 'InvalidTLS', message);
      status.reason = message;
      status.conditions = setCondition(status.conditions, {
        type: 'Valid',
        status: 'False',
        reason: 'InvalidTLS',
        message,
      });
      return { status, busy: false };
    }

    const running = pods.filter((p) => phaseOf(p) === 'Running');
    const pending = pods.filter((p) => phaseOf(p) === 'Pending');
    const dead = pods.filter((p) => phaseOf(p) === 'Failed' || phaseOf(p) === 'Succeeded');
    status.members = {
      ready: running
        .filter(isReady)
        .map((p) => p.metadata.name)
        .sort(),
      unready: pods
        .filter((p) => !isReady(p))
        .map((p) => p.metadata.name)
        .sort(),
    };

    if (running.length === 0 && pending.length === 0) {
      if (status.phase === 'Running') {
        const message = 'all etcd members are dead: create an EtcdRestore from a backup to recover';
        return this.withoutQuorum(cluster, ref, spec, status, 'AllMembersDead', message);
      }
      // A seed that never came up holds no data yet: start over, after a back-off when one failed.
      const restoreFrom = cluster.metadata?.annotations?.[RESTORE_FROM_ANNOTATION];
      const sourceProblem =
        restoreFrom === undefined ? undefined : restoreSourceProblem(restoreFrom);
      if (sourceProblem !== undefined) {
        const message = `annotation ${RESTORE_FROM_ANNOTATION} ${sourceProblem}: no seed member is created; restore through an EtcdRestore`;
        this.warnOnce(cluster, status, 'InvalidRestoreSource', message);
        status.reason = message;
        return { status, busy: false };
      }
      let attempt = 1;
      const failed = newestFailure(dead);
      if (failed) {
        const wait = this.seedBackoff(cluster, failed, restoreFrom !== undefined, status);
        if (wait > 0) return { status, busy: false };
        attempt = seedAttempt(failed.pod) + 1;
      }
      await Promise.all(dead.map((p) => this.deletePod(ref, p.metadata.name)));
      await this.createSeed(owner, ref, spec, status, restoreFrom, attempt);
      return { status, busy: true };
    }
    if (pending.length > 0) return { status, busy: true };

    if (
      !(await this.services.ensure(owner, ref, status, (why, text) =>
        this.warnOnce(cluster, status, why, text),
      ))
    )
      return { status, busy: false };
    let members: Member[];
    try {
      members = await this.etcd(this.clientURLs(ref, running), (etcd) => etcd.members());
    } catch (error) {
      if (this.tls.current && isTLSFailure(error)) {
        // Members that refuse the certificates have not lost quorum: no disaster recovery for this.
        const message = `the members refuse the operator's TLS connection (${errorMessage(error)}): check the TLS Secrets; membership is not changed until they are reached`;
        this.warnOnce(cluster, status, 'TLSHandshakeFailed', message);
        status.reason = message;
        return { status, busy: false };
      }
      status.reason = `cannot list members: ${errorMessage(error)}`;
      this.options.logger.warn(
        { err: errorMessage(error) },
        'cannot list etcd members; trying again',
      );
      // etcd 3.5 answers no member list without quorum: in a cluster that has run, fewer Ready members than
      // a majority of the last known size is a lost quorum too (a starting seed is not Ready yet either).
      const known = status.size ?? spec.size;
      const ready = status.members.ready.length;
      if (status.phase === 'Running' && ready < quorum(known)) {
        const message = `lost quorum: ${ready} of ${known} members are ready and the member list cannot be read. Create an EtcdRestore to recover`;
        return {
          ...(await this.withoutQuorum(cluster, ref, spec, status, 'LostQuorum', message)),
          busy: true,
        };
      }
      return { status, busy: true };
    }
    const named = members.map((m) => ({
      ...m,
      podName: this.options.addresses.memberName(ref.namespace, ref.name, m.peerURLs[0] ?? ''),
    }));
    const memberNames = new Set(
      named.map((m) => m.podName).filter((n): n is string => n !== undefined),
    );
    status.size = members.length;

    // Pods that are no member (a removed member, or a Pod whose member add never happened) go.
    const strays = pods.filter((p) => !memberNames.has(p.metadata.name));
    if (strays.length > 0) {
      await Promise.all(strays.map((p) => this.deletePod(ref, p.metadata.name)));
      return { status, busy: true };
    }

    // A member added whose Pod was never created (the create was refused, or the operator stopped in
    // between) gets its Pod now: removing it instead needs the quorum its addition may have taken away.
    const podNames = new Set(pods.map((p) => p.metadata.name));
    const unstarted = named.find(
      (m) => m.name === '' && m.podName !== undefined && !podNames.has(m.podName),
    );
    if (unstarted) {
      await this.createMemberPod(owner, ref, spec, named, unstarted.podName!);
      events.info(
        cluster,
        'New Member Added',
        `created the Pod of member ${unstarted.podName}, added earlier but never started`,
      );
      return { status, busy: true };
    }

    const runningNames = new Set(running.map((p) => p.metadata.name));
    const alive = named.filter((m) => m.podName !== undefined && runningNames.has(m.podName));
    if (alive.length < quorum(members.length)) {
      const message = `lost quorum: ${alive.length} of ${members.length} members are running; nothing is removed. Create an EtcdRestore to recover`;
      return this.withoutQuorum(cluster, ref, spec, status, 'LostQuorum', message, members);
    }
    status.conditions = quorumKept(status.conditions);

    const gone = named.find((m) => m.podName === undefined || !runningNames.has(m.podName));
    if (gone) {
      await this.replaceDead(cluster, ref, running, gone, status);
      return { status, busy: true };
    }

    // Every member runs: act only on a healthy cluster, one step at a time.
    const unhealthy = await this.unhealthy(running, ref);
    if (unhealthy.length > 0) {
      // A member restarting during an upgrade is expected; the cluster is only unavailable without quorum.
      if (running.length - unhealthy.length < quorum(members.length)) {
        status.conditions = setCondition(status.conditions, {
          type: 'Available',
          status: 'False',
          reason: 'MembersUnhealthy',
          message: `waiting for ${unhealthy.join(', ')} to be healthy`,
        });
      }
      return { status, busy: true };
    }
    // etcd keeps answering for a moment after SIGTERM (a restarting member passes the health check),
    // so a Pod that is not Ready yet, or still runs the image it is being upgraded from, holds every further change.
    if (running.some((p) => !isReady(p) || runsOlderImage(p))) return { status, busy: true };

    if (members.length !== spec.size) {
      await this.resize(owner, ref, spec, running, named, status);
      return { status, busy: true };
    }
    status.conditions = clearCondition(status.conditions, 'Scaling');

    const outdated = running.find((p) => p.metadata.annotations?.['etcd.version'] !== spec.version);
    if (outdated) {
      await this.upgrade(cluster, ref, spec, outdated, status);
      return { status, busy: true };
    }
    status.conditions = clearCondition(status.conditions, 'Upgrading');
    const [stale] = withOlderTLS(running, this.tls.current?.digest);
    if (stale) {
      // One extra member with the new certificates first, then the old one goes (scale-down prefers it): quorum never shrinks.
      status.conditions = setCondition(status.conditions, {
        type: 'Rolling',
        status: 'True',
        reason: 'CertificatesChanged',
        message: `replacing ${stale.metadata.name}, which runs with older TLS Secrets`,
      });
      await this.addMember(
        owner,
        ref,
        spec,
        running,
        named,
        status,
        `to replace ${stale.metadata.name}, which runs with older TLS Secrets`,
      );
      return { status, busy: true };
    }
    status.conditions = clearCondition(status.conditions, 'Rolling');
    status.phase = 'Running';
    status.currentVersion = spec.version;
    status.targetVersion = '';
    delete status.reason;
    this.warned.clear();
    status.conditions = setCondition(status.conditions, {
      type: 'Available',
      status: 'True',
      reason: 'Cluster available',
      message: `${members.length} healthy members`,
    });
    return { status, busy: false };
  }

  /** Reports the lost quorum; with `spec.restorePolicy`, restores the newest backup once it has lasted long enough. */
  /** Reports the lost quorum; with `spec.restorePolicy`, restores the newest backup once it has lasted long enough ({@link recoveryClockRuns}). */
  private async withoutQuorum(
    cluster: EtcdClusterObject,
    ref: ObjectRef,
    spec: ClusterSpec,
    status: EtcdClusterStatus,
    reason: string,
    message: string,
    members?: Member[],
  ): Promise<TickOutcome> {
    this.warnOnce(cluster, status, reason, message);
    status.reason = message;
    status.conditions = setCondition(status.conditions, {
      type: 'Available',
      status: 'False',
      reason,
      message,
    });
    if (!recoveryClockRuns(status.conditions, members)) return { status, busy: false };
    status.conditions = quorumLost(status.conditions, message);
    const nextLookMs = await this.recovery.step(
      cluster,
      ref,
      spec.restorePolicy,
      status,
      (why, text) => this.warnOnce(cluster, status, why, text),
    );
    return { status, busy: false, ...(nextLookMs !== undefined ? { nextLookMs } : {}) };
  }

  /**
   * The spec with the TLS the members run with (recorded on their Pods; none on Pods made before the
   * operator supported TLS). A running cluster keeps its mode: admission refuses a change, and an
   * object that bypassed it, or whose `spec.TLS` was written while it was still ignored, gets one
   * Warning. Plain members are then managed as plain; members running TLS that the spec no longer
   * describes cannot be reached, so nothing is done (undefined).
   */
  private withRunningTLS(
    cluster: EtcdClusterObject,
    status: EtcdClusterStatus,
    spec: ClusterSpec,
    pods: Pod[],
  ): ClusterSpec | undefined {
    const live = pods.find((p) => phaseOf(p) === 'Running' || phaseOf(p) === 'Pending');
    if (!live) return spec; // the next seed starts in the spec's mode
    const running = live.metadata.annotations?.[TLS_MODE_ANNOTATION] ?? NO_TLS;
    status.tlsMode = running;
    const problem = tlsModeChangeProblem(running, tlsMode(spec.tls));
    if (!problem) {
      this.tlsModeWarning = undefined;
      return spec;
    }
    if (this.tlsModeWarning !== problem) {
      this.tlsModeWarning = problem;
      events.warn(cluster, 'TLSChangeRefused', problem);
      this.options.logger.warn({}, problem);
    }
    if (running === NO_TLS) return { ...spec, tls: undefined };
    status.reason = problem;
    return undefined;
  }

  /** One Warning Event per standing problem, not one per look at it. */
  private warnOnce(
    cluster: EtcdClusterObject,
    status: EtcdClusterStatus,
    reason: string,
    message: string,
    eventMessage = message,
  ): void {
    if (status.reason === message || this.warned.has(message)) return;
    if (this.warned.size >= 100) this.warned.clear(); // messages that keep changing: report again rather than grow
    this.warned.add(message);
    events.warn(cluster, reason, eventMessage);
  }

  /** The first member; from a snapshot when the cluster was recreated by an EtcdRestore. */
  private async createSeed(
    cluster: ClusterOwner,
    ref: ObjectRef,
    spec: ClusterSpec,
    status: EtcdClusterStatus,
    restoreFrom: string | undefined,
    attempt: number,
  ): Promise<void> {
    const member = newMemberName(ref.name);
    const urls = this.memberURLs(ref, member);
    const pod = memberPod({
      cluster,
      spec,
      member,
      urls,
      initialCluster: `${member}=${urls.peerURL}`,
      state: 'new',
      token: randomUUID(),
      restoreFrom,
      tlsDigest: this.tls.current?.digest,
    });
    pod.metadata!.annotations = {
      ...(pod.metadata!.annotations ?? {}),
      [SEED_ATTEMPT_ANNOTATION]: String(attempt),
    };
    await this.createPod(pod);
    // The download URL carries the restore's token: never logged.
    this.options.logger.info(
      { member, attempt },
      restoreFrom ? 'created the seed member from a backup' : 'created the seed member',
    );
    status.phase = 'Creating';
    status.size = 1;
    status.currentVersion = spec.version;
    status.conditions = setCondition(status.conditions, {
      type: 'Scaling',
      status: 'True',
      reason: 'Scaling up',
      message: `Current cluster size: 0, desired cluster size: ${spec.size}`,
    });
  }

  private async replaceDead(
    cluster: EtcdClusterObject,
    ref: ObjectRef,
    running: Pod[],
    gone: Member & { podName?: string },
    status: EtcdClusterStatus,
  ): Promise<void> {
    const who = gone.podName ?? gone.peerURLs[0] ?? gone.id;
    try {
      await this.etcd(this.clientURLs(ref, running), (etcd) => etcd.remove(gone.id));
    } catch (error) {
      this.retryLater(status, `cannot remove dead member ${who}`, error);
      return;
    }
    if (gone.podName) await this.deletePod(ref, gone.podName);
    events.info(
      cluster,
      'Replacing Dead Member',
      `removed dead member ${who}; a new member replaces it`,
    );
    this.options.logger.warn({ member: who }, 'removed a dead member');
    status.conditions = setCondition(status.conditions, {
      type: 'Recovering',
      status: 'True',
      reason: 'Replacing dead member',
      message: `removed ${who}`,
    });
  }

  private async resize(
    cluster: ClusterOwner,
    ref: ObjectRef,
    spec: ClusterSpec,
    running: Pod[],
    members: (Member & { podName?: string })[],
    status: EtcdClusterStatus,
  ): Promise<void> {
    const up = members.length < spec.size;
    status.conditions = clearCondition(status.conditions, 'Recovering');
    const staleNames = new Set(
      withOlderTLS(running, this.tls.current?.digest).map((p) => p.metadata.name),
    );
    // The extra member of a certificate roll is no scaling.
    if (up || staleNames.size === 0) {
      status.conditions = setCondition(status.conditions, {
        type: 'Scaling',
        status: 'True',
        reason: up ? 'Scaling up' : 'Scaling down',
        message: `Current cluster size: ${members.length}, desired cluster size: ${spec.size}`,
      });
    }
    if (up) {
      await this.addMember(
        cluster,
        ref,
        spec,
        running,
        members,
        status,
        `(${members.length + 1} of ${spec.size})`,
      );
      return;
    }
    const endpoints = this.clientURLs(ref, running);
    // Remove a follower (removing the leader forces an election for nothing), one with older certificates first.
    const leader = await this.etcd(endpoints, (etcd) => etcd.status()).then(
      (s) => s.leader,
      () => '',
    );
    const candidates = members
      .filter((m) => m.podName !== undefined)
      .sort(
        (a, b) =>
          Number(staleNames.has(b.podName!)) - Number(staleNames.has(a.podName!)) ||
          (a.podName! < b.podName! ? 1 : -1),
      );
    const victim =
      candidates.find(
        (m) => m.id !== leader && (staleNames.size === 0 || staleNames.has(m.podName!)),
      ) ?? candidates[0];
    if (!victim) return;
    try {
      await this.etcd(endpoints, (etcd) => etcd.remove(victim.id));
    } catch (error) {
      this.retryLater(status, `cannot remove member ${victim.podName}`, error);
      return;
    }
    await this.deletePod(ref, victim.podName!);
    events.info(
      cluster,
      'Member Removed',
      `removed member ${victim.podName} (${members.length - 1} of ${spec.size})`,
    );
    this.options.logger.info(
      { member: victim.podName, size: members.length - 1 },
      'removed a member',
    );
  }

  /** Adds one member through the member API, then creates its Pod; `why` ends the Event's message. */
  private async addMember(
    cluster: ClusterOwner,
    ref: ObjectRef,
    spec: ClusterSpec,
    running: Pod[],
    members: (Member & { podName?: string })[],
    status: EtcdClusterStatus,
    why: string,
  ): Promise<void> {
    const member = newMemberName(ref.name);
    const urls = this.memberURLs(ref, member);
    try {
      await this.etcd(this.clientURLs(ref, running), (etcd) => etcd.add(urls.peerURL));
    } catch (error) {
      this.retryLater(status, `cannot add a member`, error);
      return;
    }
    await this.createMemberPod(
      cluster,
      ref,
      spec,
      [...members, { id: '', name: '', peerURLs: [urls.peerURL], clientURLs: [], podName: member }],
      member,
    );
    events.info(cluster, 'New Member Added', `added member ${member} ${why}`);
    this.options.logger.info({ member, size: members.length + 1 }, 'added a member');
  }

  /** The Pod of `member`, which the member list (`members`, this one included) already holds, joining as `existing`. */
  private async createMemberPod(
    cluster: ClusterOwner,
    ref: ObjectRef,
    spec: ClusterSpec,
    members: (Member & { podName?: string })[],
    member: string,
  ): Promise<void> {
    const urls = this.memberURLs(ref, member);
    const initialCluster = members.map((m) => `${m.podName ?? m.name}=${m.peerURLs[0]}`).join(',');
    await this.createPod(
      memberPod({
        cluster,
        spec,
        member,
        urls,
        initialCluster,
        state: 'existing',
        tlsDigest: this.tls.current?.digest,
      }),
    );
  }

  private async upgrade(
    cluster: EtcdClusterObject,
    ref: ObjectRef,
    spec: ClusterSpec,
    pod: Pod,
    status: EtcdClusterStatus,
  ): Promise<void> {
    status.targetVersion = spec.version;
    status.conditions = setCondition(status.conditions, {
      type: 'Upgrading',
      status: 'True',
      reason: 'Cluster upgrading',
      message: `upgrading to ${spec.version}`,
    });
    // Strategic merge keys containers by name, so only the image changes; the Pod and its data stay.
    await this.podsApi.patch(
      { namespace: ref.namespace, name: pod.metadata.name },
      {
        metadata: { annotations: { 'etcd.version': spec.version } },
        spec: { containers: [{ name: 'etcd', image: `${spec.repository}:v${spec.version}` }] },
      },
      { type: 'strategic' },
    );
    events.info(
      cluster,
      'Member Upgraded',
      `member ${pod.metadata.name} upgraded to ${spec.version}`,
    );
    this.options.logger.info(
      { member: pod.metadata.name, version: spec.version },
      'upgraded a member',
    );
  }

  /**
   * Reports a failed seed once (a Warning Event) and says how many ms remain before the next
   * attempt; the wait doubles with each attempt, so a seed that cannot start (e.g. cannot download
   * its backup) is retried ever more slowly instead of every tick.
   */
  private seedBackoff(
    cluster: EtcdClusterObject,
    failed: { pod: Pod; at: number },
    restoring: boolean,
    status: EtcdClusterStatus,
  ): number {
    const attempt = seedAttempt(failed.pod);
    const delay = seedRetryDelayMs(attempt);
    const wait = failed.at + delay - Date.now();
    const what = `${restoring ? 'the seed member restoring from the backup' : 'the seed member'} ${failed.pod.metadata.name} failed (${seedFailure(failed.pod)})`;
    const message = `${what}; attempt ${attempt}, trying again ${Math.round(delay / 1000)} s after the failure`;
    if (!this.reportedSeeds.has(failed.pod.metadata.uid ?? failed.pod.metadata.name)) {
      this.reportedSeeds.add(failed.pod.metadata.uid ?? failed.pod.metadata.name);
      events.warn(cluster, restoring ? 'RestoreSeedFailed' : 'SeedFailed', message);
      this.options.logger.warn(
        { member: failed.pod.metadata.name, attempt, retryInMs: Math.max(0, wait) },
        what,
      );
    }
    status.reason = message;
    return wait;
  }

  private retryLater(status: EtcdClusterStatus, what: string, error: unknown): void {
    if (!isTransientMembershipError(error))
      throw new Error(`${what}: ${errorMessage(error)}`, { cause: error });
    status.reason = `${what}: ${errorMessage(error)} (etcd refuses membership changes for a few seconds after one; trying again)`;
    this.options.logger.info({ err: errorMessage(error) }, `${what}; trying again`);
  }

  /** Members whose linearizable read fails. */
  private async unhealthy(running: Pod[], ref: ObjectRef): Promise<string[]> {
    const results = await Promise.all(
      running.map(async (pod) => {
        const url = this.clientURL(ref, pod);
        return url && (await this.etcd([url], (etcd) => etcd.healthy()))
          ? undefined
          : pod.metadata.name;
      }),
    );
    return results.filter((n): n is string => n !== undefined);
  }

  /**
   * Members are dialled at their Pods' own addresses, never through a Service name the tenant could
   * own; members serving TLS by their own names, which their certificates must carry ({@link memberClientURL}).
   */
  private clientURLs(ref: ObjectRef, pods: Pod[]): string[] {
    return pods
      .map((p) => this.clientURL(ref, p))
      .filter((url): url is string => url !== undefined);
  }

  private clientURL(ref: ObjectRef, pod: Pod): string | undefined {
    return memberClientURL(
      this.options.addresses,
      ref.namespace,
      ref.name,
      { name: pod.metadata.name, podIP: pod.status?.podIP },
      this.spec?.tls,
    );
  }

  /** A new member's URLs, `https` where the spec asks for TLS. */
  private memberURLs(ref: ObjectRef, member: string): MemberURLs {
    return securedURLs(
      this.options.addresses.member(ref.namespace, ref.name, member),
      this.spec?.tls,
    );
  }

  /** Runs `work` against `endpoints`, with the operator's client certificate when members serve TLS. */
  private etcd<T>(endpoints: string[], work: (client: EtcdClient) => Promise<T>): Promise<T> {
    return withEtcd(endpoints, work, this.tls.current?.credentials);
  }

  private async pods(ref: ObjectRef): Promise<Pod[]> {
    const list = await this.podsApi.list({
      namespace: ref.namespace,
      labelSelector: memberLabels(ref.name),
    });
    // Only this cluster's own Pods: a same-named cluster recreated must not adopt the old one's.
    return list.items.filter((p) => !p.metadata.deletionTimestamp && controllerUid(p) === ref.uid);
  }

  /** `pod` comes from {@link memberPod}, adopted by its cluster. */
  private async createPod(pod: KubeObject): Promise<void> {
    await this.podsApi.create(pod as Pod);
  }

  /** Already gone counts as deleted. */
  private async deletePod(ref: ObjectRef, name: string): Promise<void> {
    await this.podsApi.delete({ namespace: ref.namespace, name }, { gracePeriodSeconds: 5 });
  }
}

/** The Pods started with other TLS Secrets than those of `digest` (none without TLS): the members a certificate roll replaces. */
function withOlderTLS(pods: Pod[], digest: string | undefined): Pod[] {
  return digest === undefined
    ? []
    : pods.filter((p) => p.metadata.annotations?.[TLS_DIGEST_ANNOTATION] !== digest);
}

/** A dial that failed on certificates rather than on an absent member. */
function isTLSFailure(error: unknown): boolean {
  return /certificate|handshake|ssl|tls|self.signed|unable to verify|bad record mac|alert/i.test(
    errorMessage(error),
  );
}

/** The uid of the Pod's controller (its cluster, as `adopt` set it). */
function controllerUid(pod: Pod): string | undefined {
  const owners = (pod.metadata.ownerReferences ?? []) as { uid?: string; controller?: boolean }[];
  return owners.find((owner) => owner.controller === true)?.uid;
}

/** The most recently failed of the dead Pods, with when it failed. */
function newestFailure(dead: Pod[]): { pod: Pod; at: number } | undefined {
  let newest: { pod: Pod; at: number } | undefined;
  for (const pod of dead) {
    const at = seedFailedAt(pod) ?? 0;
    if (!newest || at > newest.at) newest = { pod, at };
  }
  return newest;
}
