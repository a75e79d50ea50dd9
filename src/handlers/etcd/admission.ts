import { AdmissionError, on, type AdmissionContext } from 'konductor';
import { sameJson } from '../common/same-json.js';
import { DEFAULT_VERSION, readClusterSpec } from './cluster-spec.js';
import { tlsMode, tlsModeChangeProblem } from './tls-policy.js';
import { API_VERSION, type EtcdClusterSpec } from './types.js';

function parts(version: string): [number, number, number] {
  const [major, minor, patch] = version.replace(/^v/, '').split(/[.+-]/).map(Number);
  return [major ?? 0, minor ?? 0, patch ?? 0];
}

/**
 * Why a cluster cannot move from one etcd version to another, or `undefined`: etcd upgrades one
 * minor version at a time (each member restarts on the next release, which reads the previous
 * one's data), and has no downgrade path for a running cluster.
 */
export function versionChangeProblem(from: string, to: string): string | undefined {
  const [fromMajor, fromMinor, fromPatch] = parts(from);
  const [toMajor, toMinor, toPatch] = parts(to);
  if (toMajor !== fromMajor)
    return `spec.version: ${from} to ${to} changes the major version, which etcd cannot do in place; restore a backup into a new cluster instead`;
  if (toMinor < fromMinor || (toMinor === fromMinor && toPatch < fromPatch)) {
    return `spec.version: ${from} to ${to} is a downgrade, which a running etcd cluster cannot do; restore a backup into a new cluster instead`;
  }
  if (toMinor > fromMinor + 1) {
    return `spec.version: ${from} to ${to} skips ${toMinor - fromMinor - 1} minor version(s); etcd upgrades one minor version at a time: set ${toMajor}.${fromMinor + 1}.x first`;
  }
  return undefined;
}

type Cluster = {
  spec?: Partial<EtcdClusterSpec>;
  status?: { tlsMode?: unknown };
  metadata?: { namespace?: string; name?: string };
};

/**
 * Admission for EtcdClusters: a spec the operator would refuse (size, version format, reserved
 * labels) is refused at `kubectl apply`, and so is a version change it cannot do safely (a downgrade,
 * a major change, a skipped minor version) or a change of which sides talk TLS, with the reason. Clusters stored before the webhook
 * existed are still reported by Events.
 */
export class EtcdAdmission {
  @on.validate(API_VERSION, 'etcdclusters', { operations: ['CREATE', 'UPDATE'] })
  cluster(context: AdmissionContext): void {
    const where = `EtcdCluster ${context.namespace}/${context.name}`;
    const cluster = context.body as unknown as Cluster;
    // Metadata-only updates (labels, the finalizer's removal) pass, so a cluster stored before the
    // webhook existed can still be relabelled and deleted.
    if (
      context.operation === 'UPDATE' &&
      context.old &&
      sameJson((context.old as unknown as Cluster).spec, cluster.spec)
    )
      return;
    const read = readClusterSpec(cluster.spec);
    if ('problems' in read)
      throw new AdmissionError(`${where} is refused: ${read.problems.join('; ')}`, { code: 422 });
    if (context.operation !== 'UPDATE' || !context.old) return;
    const before = String(
      (context.old as unknown as Cluster).spec?.version ?? DEFAULT_VERSION,
    ).replace(/^v/, '');
    const problem =
      before === read.spec.version ? undefined : versionChangeProblem(before, read.spec.version);
    if (problem) throw new AdmissionError(`${where} is refused: ${problem}`, { code: 422 });
    // Judged against the mode the members run with (status.tlsMode), not the old spec: a spec.TLS written
    // while the operator still ignored it may be removed, and one removed by mistake may be put back.
    const running = (context.old as unknown as Cluster).status?.tlsMode;
    const tlsProblem =
      typeof running === 'string'
        ? tlsModeChangeProblem(running, tlsMode(read.spec.tls))
        : undefined;
    if (tlsProblem) throw new AdmissionError(`${where} is refused: ${tlsProblem}`, { code: 422 });
  }
}
