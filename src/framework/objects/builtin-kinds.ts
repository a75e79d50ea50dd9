/**
 * The built-in kinds of the core and apps groups, each a value (for decorators, `owns` and the
 * client) and a type of the same name (for contexts): `@on.reconcile(kinds.Deployment)`,
 * `ReconcileContext<kinds.Deployment>`. The object types are client-node's, as they arrive on the
 * wire (timestamps are strings, not `Date`s); importing this module loads none of client-node.
 */
import type * as k8s from '@kubernetes/client-node';
import { defineKind } from './kind.js';

/**
 * An object as JSON carries it: client-node's model types say `Date` where the API sends an RFC 3339
 * string, since its own deserializer converts them; the framework hands handlers the JSON.
 */
export type Wire<T> = T extends Date
  ? string
  : T extends (infer E)[]
    ? Wire<E>[]
    : T extends object
      ? { [K in keyof T]: Wire<T[K]> }
      : T;

export type Pod = Wire<k8s.V1Pod>;
export const Pod = defineKind<Pod>('v1', 'Pod', 'pods');
export type Service = Wire<k8s.V1Service>;
export const Service = defineKind<Service>('v1', 'Service', 'services');
export type ConfigMap = Wire<k8s.V1ConfigMap>;
export const ConfigMap = defineKind<ConfigMap>('v1', 'ConfigMap', 'configmaps');
export type Secret = Wire<k8s.V1Secret>;
export const Secret = defineKind<Secret>('v1', 'Secret', 'secrets');
export type PersistentVolumeClaim = Wire<k8s.V1PersistentVolumeClaim>;
export const PersistentVolumeClaim = defineKind<PersistentVolumeClaim>(
  'v1',
  'PersistentVolumeClaim',
  'persistentvolumeclaims',
);
export type PersistentVolume = Wire<k8s.V1PersistentVolume>;
export const PersistentVolume = defineKind<PersistentVolume>(
  'v1',
  'PersistentVolume',
  'persistentvolumes',
);
export type Namespace = Wire<k8s.V1Namespace>;
export const Namespace = defineKind<Namespace>('v1', 'Namespace', 'namespaces');
export type ServiceAccount = Wire<k8s.V1ServiceAccount>;
export const ServiceAccount = defineKind<ServiceAccount>('v1', 'ServiceAccount', 'serviceaccounts');
export type Endpoints = Wire<k8s.V1Endpoints>;
export const Endpoints = defineKind<Endpoints>('v1', 'Endpoints', 'endpoints');
export type Node = Wire<k8s.V1Node>;
export const Node = defineKind<Node>('v1', 'Node', 'nodes');
export type Event = Wire<k8s.CoreV1Event>;
export const Event = defineKind<Event>('v1', 'Event', 'events');
export type Deployment = Wire<k8s.V1Deployment>;
export const Deployment = defineKind<Deployment>('apps/v1', 'Deployment', 'deployments');
export type StatefulSet = Wire<k8s.V1StatefulSet>;
export const StatefulSet = defineKind<StatefulSet>('apps/v1', 'StatefulSet', 'statefulsets');
export type DaemonSet = Wire<k8s.V1DaemonSet>;
export const DaemonSet = defineKind<DaemonSet>('apps/v1', 'DaemonSet', 'daemonsets');
export type ReplicaSet = Wire<k8s.V1ReplicaSet>;
export const ReplicaSet = defineKind<ReplicaSet>('apps/v1', 'ReplicaSet', 'replicasets');
