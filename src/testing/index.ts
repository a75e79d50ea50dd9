/**
 * Testing utilities for operators built with Konductor: a real kube-apiserver + etcd
 * started in-process ({@link TestControlPlane}), optionally with kube-controller-manager
 * (`controllerManager: true`: garbage collection, namespace deletion, workload controllers),
 * and helpers to install CRDs.
 *
 * @example
 * ```ts
 * import { TestControlPlane } from 'konductor/testing';
 * const plane = await TestControlPlane.start();
 * const kc = plane.kubeConfig();
 * // ... run your operator and assert on objects ...
 * await plane.stop();
 * ```
 * @packageDocumentation
 */
export { TestControlPlane, type ControlPlaneOptions, type PeerApiServer } from './control-plane.js';
export { kubeConfigForServiceAccount, kubeConfigWithToken, type ServiceAccountRef } from './identities.js';
export { resolveBinaries, resolveControllerManager, cacheRoot, type ControlPlaneBinaries } from './binaries.js';
export { installCrds, readCrds } from './crds.js';
export { NodeCluster, type NodeClusterOptions, type CommandResult } from './node-cluster.js';
export { runOperator, waitFor, type TestOperator, type RecordedRequest } from './operator-harness.js';
export { applyManifests, readManifests } from './apply.js';
// For test helpers that start processes of their own: signal a whole process group, and have the
// processes killed should the test runner die without stopping them.
export { killGroup } from './managed-process.js';
export { startReaper, registerPid } from './process-reaper.js';
export { FaultProxy, type FaultMode, type FaultModeName, type FaultCounts, type FaultProxyOptions, type FaultProxyStats, type ProxiedControlPlane, type ProxiedRequest } from './chaos/index.js';
