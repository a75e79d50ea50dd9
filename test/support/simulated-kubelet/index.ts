/**
 * A simulated kubelet for the etcd specs and `npm start`'s embedded demo (repository-only, never
 * shipped): {@link EtcdPodRunner} runs the etcd Pods of a test control plane, which has no kubelet,
 * as local processes, and {@link LoopbackAddresses} gives their members loopback URLs in place of
 * Pod DNS names.
 * @packageDocumentation
 */
export {
  EtcdPodRunner,
  type EtcdPodRunnerOptions,
  type RunningEtcdProcess,
} from './etcd-pod-runner.js';
export { LoopbackAddresses } from './loopback-addresses.js';
