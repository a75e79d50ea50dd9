/**
 * Running etcd Pods without a kubelet: {@link EtcdPodRunner} runs them as local processes and
 * {@link LoopbackAddresses} gives their members loopback URLs.
 * @packageDocumentation
 */
export { EtcdPodRunner, type EtcdPodRunnerOptions, type RunningEtcdProcess } from './pod-runner.js';
export { LoopbackAddresses } from './loopback-addresses.js';
