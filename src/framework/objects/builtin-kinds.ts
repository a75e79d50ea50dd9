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

/** A Pod as JSON carries it. */
export type Pod = Wire<k8s.V1Pod>;
/** The Pod kind: `v1`, `pods`. */
export const Pod = defineKind<Pod>('v1', 'Pod', 'pods');
/** A Service as JSON carries it. */
export type Service = Wire<k8s.V1Service>;
/** The Service kind: `v1`, `services`. */
export const Service = defineKind<Service>('v1', 'Service', 'services');
/** A ConfigMap as JSON carries it. */
export type ConfigMap = Wire<k8s.V1ConfigMap>;
/** The ConfigMap kind: `v1`, `configmaps`. */
export const ConfigMap = defineKind<ConfigMap>('v1', 'ConfigMap', 'configmaps');
/** A Secret as JSON carries it. */
export type Secret = Wire<k8s.V1Secret>;
/** The Secret kind: `v1`, `secrets`. */
export const Secret = defineKind<Secret>('v1', 'Secret', 'secrets');
/** A PersistentVolumeClaim as JSON carries it. */
export type PersistentVolumeClaim = Wire<k8s.V1PersistentVolumeClaim>;
/** The PersistentVolumeClaim kind: `v1`, `persistentvolumeclaims`. */
export const PersistentVolumeClaim = defineKind<PersistentVolumeClaim>(
  'v1',
  'PersistentVolumeClaim',
  'persistentvolumeclaims',
);
/** A PersistentVolume as JSON carries it. */
export type PersistentVolume = Wire<k8s.V1PersistentVolume>;
/** The PersistentVolume kind: `v1`, `persistentvolumes`. */
export const PersistentVolume = defineKind<PersistentVolume>(
  'v1',
  'PersistentVolume',
  'persistentvolumes',
);
/** A Namespace as JSON carries it. */
export type Namespace = Wire<k8s.V1Namespace>;
/** The Namespace kind: `v1`, `namespaces`. */
export const Namespace = defineKind<Namespace>('v1', 'Namespace', 'namespaces');
/** A ServiceAccount as JSON carries it. */
export type ServiceAccount = Wire<k8s.V1ServiceAccount>;
/** The ServiceAccount kind: `v1`, `serviceaccounts`. */
export const ServiceAccount = defineKind<ServiceAccount>('v1', 'ServiceAccount', 'serviceaccounts');
/** An Endpoints object as JSON carries it. */
export type Endpoints = Wire<k8s.V1Endpoints>;
/** The Endpoints kind: `v1`, `endpoints`. */
export const Endpoints = defineKind<Endpoints>('v1', 'Endpoints', 'endpoints');
/** A Node as JSON carries it. */
export type Node = Wire<k8s.V1Node>;
/** The Node kind: `v1`, `nodes`. */
export const Node = defineKind<Node>('v1', 'Node', 'nodes');
/** An Event as JSON carries it. */
export type Event = Wire<k8s.CoreV1Event>;
/** The Event kind: `v1`, `events`. */
export const Event = defineKind<Event>('v1', 'Event', 'events');
/** A Deployment as JSON carries it. */
export type Deployment = Wire<k8s.V1Deployment>;
/** The Deployment kind: `apps/v1`, `deployments`. */
export const Deployment = defineKind<Deployment>('apps/v1', 'Deployment', 'deployments');
/** A StatefulSet as JSON carries it. */
export type StatefulSet = Wire<k8s.V1StatefulSet>;
/** The StatefulSet kind: `apps/v1`, `statefulsets`. */
export const StatefulSet = defineKind<StatefulSet>('apps/v1', 'StatefulSet', 'statefulsets');
/** A DaemonSet as JSON carries it. */
export type DaemonSet = Wire<k8s.V1DaemonSet>;
/** The DaemonSet kind: `apps/v1`, `daemonsets`. */
export const DaemonSet = defineKind<DaemonSet>('apps/v1', 'DaemonSet', 'daemonsets');
/** A ReplicaSet as JSON carries it. */
export type ReplicaSet = Wire<k8s.V1ReplicaSet>;
/** The ReplicaSet kind: `apps/v1`, `replicasets`. */
export const ReplicaSet = defineKind<ReplicaSet>('apps/v1', 'ReplicaSet', 'replicasets');
