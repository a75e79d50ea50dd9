/**
 * The etcd operator's test support (not shipped with `konductor`): {@link EtcdPodRunner} runs the
 * etcd Pods of a test control plane, which has no kubelet, as local processes, and
 * {@link LoopbackAddresses} gives their members loopback URLs in place of Pod DNS names. Used by the
 * etcd specs and by `npm start`'s embedded demo.
 * @packageDocumentation
 */
export { EtcdPodRunner, type EtcdPodRunnerOptions, type RunningEtcdProcess } from './pod-runner.js';
export { LoopbackAddresses } from './loopback-addresses.js';
