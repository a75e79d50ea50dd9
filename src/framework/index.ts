/**
 * Konductor: Kubernetes operators in TypeScript, in the style of Kopf.
 *
 * This entry point holds what an operator author writes against: the decorators and the handler
 * contexts they receive, the errors a handler throws, Events, the API client, logging, and
 * `createOperator` to run handlers in a process of one's own. The building blocks the operator is
 * made of (engines, reactor, watches, the framework's bookkeeping keys) are in `konductor/runtime`.
 *
 * @example
 * ```ts
 * import { on, type ChangeContext } from 'konductor';
 *
 * export class Widgets {
 *   @on.create('example.com/v1', 'widgets')
 *   async created({ patch }: ChangeContext): Promise<void> {
 *     patch.status.phase = 'Ready';
 *   }
 * }
 * ```
 * @packageDocumentation
 */
import './registry/metadata.js';

// Declaring handlers: decorators, or plain functions in a Registry.
export { on } from './decorators/on.js';
export { timer } from './decorators/timer.js';
export { daemon } from './decorators/daemon.js';
export { Registry, type HandlerClass } from './registry/registry.js';
export { PRESENT, ABSENT, type MetaFilter, type ValueFilter } from './handler/filters.js';
export type { DurationInput } from './clock/duration.js';
export type { ChangeReason } from './state/progress.js';

// What a handler receives, returns and throws.
export type {
  ChangeContext,
  ChangeHandlerFn,
  ChangeHandlerOptions,
  ChangeHandlerSpec,
  DaemonContext,
  DaemonHandlerFn,
  DaemonOptions,
  DaemonSpec,
  ObjectContext,
  TimerContext,
  TimerHandlerFn,
  TimerOptions,
  TimerSpec,
  ErrorsMode,
  EventContext,
  EventHandlerFn,
  EventHandlerSpec,
  HandlerOptions,
  HandlerSpec,
  FieldChangeContext,
  ChangeValue,
  EssenceOf,
  FieldValue,
  SpecOf,
  StatusOf,
  ObjectOf,
  TypedObject,
  IsObjectType,
} from './handler/handler-specs.js';
export type { Patch, MergePatch, MergePatchValue } from './handler/patch.js';
export type { Diff, DiffItem } from './state/diff.js';
export type { KubeObject } from './objects/kube-object.js';
export { TemporaryError, PermanentError, HandlerRetriesError, HandlerTimeoutError } from './handler/errors.js';
export { events, type EventType, type ObjectEvents } from './posting/events.js';

// Talking to the cluster from a handler.
export { ApiClient, type RequestInit, type Query, type RequestCounter } from './api/api-client.js';
export { ApiError, type KubeStatus } from './api/api-error.js';

// Running an operator in a process of one's own.
export { createOperator, Operator, type OperatorOptions } from './runtime/operator.js';
export { HealthServerError } from './runtime/health-server.js';
export { loadKubeconfig, KubeconfigError, type ClusterAccess, type KubeconfigSource } from './api/kubeconfig.js';
export { createLogger, silentLogger, type Logger, type LoggerOptions, type LogFormat } from './observability/logger.js';

// Typed resource client and owner references.
export {
  ResourceClient,
  type ResourceObject,
  type ListOptions,
  type ListResult,
  type PatchOptions,
  type JsonPatchOptions,
  type ApplyOptions,
  type ApplyObject,
  type DeleteOptions,
  type WriteOptions,
  type StatusPatch,
} from './api/resource-client.js';
export type { ObjectRef } from './api/object-ref.js';
export type { DeepPartial } from './objects/merge-patch.js';
export { adopt, ownerReference, type OwnerReference, type OwnerReferenceOptions, type AdoptOptions } from './objects/owner-reference.js';
export { watch, type ReconcileContext, type ReconcileOptions, type ReconcileResult, type ReconcileHandlerFn, type WatchRelation, type KindReference, type ObjectKey } from './handler/reconcile-specs.js';
export type { Condition, Conditions } from './handler/conditions.js';
export { defineKind, type Kind, type CustomObject } from './objects/kind.js';
export * as kinds from './objects/builtin-kinds.js';
export type { OwnedContext, OwnedOptions, OwnedChange, OwnedEventType, OwnedHandlerFn, OwnedSpec } from './handler/owned-specs.js';
// Read cache and indexes: `ctx.cache`, `ctx.indexes`, `@on.cache`, `@on.index`.
export type { Cache, CachedResource, CacheOptions, CacheSpec, Index, Indexes, IndexContext, IndexFn, IndexOptions, IndexSpec } from './handler/cache.js';
// Activities (lifecycle): @on.startup, @on.cleanup, @on.probe.
export type { ActivityContext, ActivityFn, ActivityKind, ActivityOptions, ActivitySpec, StartupOptions, CleanupOptions, ProbeOptions } from './handler/activity-specs.js';
export { StartupError } from './runtime/activities.js';
// memo: per-object memory, `when` filter contexts, `@on.event` field/value options.
export type { Memo } from './handler/memo.js';
export type { FilterContext } from './handler/filter-context.js';
export type { EventHandlerOptions } from './handler/handler-specs.js';
// Admission webhooks: @on.validate, @on.mutate, @on.convert.
export type {
  AdmissionContext,
  AdmissionHandlerFn,
  AdmissionOperation,
  AdmissionOptions,
  AdmissionSpec,
  AdmissionUser,
  ConversionContext,
  ConversionFn,
  ConversionSpec,
  LabelSelector,
  MutationContext,
} from './handler/admission-specs.js';
export { AdmissionError } from './handler/errors.js';
