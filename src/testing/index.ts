/**
 * Testing utilities for operators built with Konductor: a real kube-apiserver + etcd
 * started in-process ({@link TestControlPlane}), optionally with kube-controller-manager
 * (`controllerManager: true`: garbage collection, namespace deletion, workload controllers),
 * helpers to install CRDs and manifests, a harness that runs an operator in the test's process,
 * identities to act as, and a local node with a kubelet ({@link NodeCluster}). The fault proxy is in
 * `konductor/testing/chaos`.
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
 * @module konductor/testing
 */
export { TestControlPlane, type ControlPlaneOptions } from './control-plane.js';
export { installCrds, readCrds } from './crds.js';
export { applyManifests, readManifests } from './apply.js';
export { runOperator, waitFor, type TestOperator } from './operator-harness.js';
export {
  kubeConfigForServiceAccount,
  kubeConfigWithToken,
  type ServiceAccountRef,
} from './identities.js';
export { NodeCluster, type NodeClusterOptions } from './node-cluster.js';
