/**
 * Konductor: Kubernetes operators in TypeScript, in the style of Kopf.
 * @packageDocumentation
 */
import './registry/metadata.js';

export { on } from './decorators/on.js';
export { timer } from './decorators/timer.js';
export { daemon } from './decorators/daemon.js';
export { TimerEngine } from './engines/timers.js';
export { DaemonEngine } from './engines/daemons.js';
export { nextRunAt, type TimerSchedule, type TimerState } from './engines/schedule.js';
export { toMilliseconds, type DurationInput } from './clock/duration.js';
export { createOperator, Operator, type OperatorOptions } from './runtime/operator.js';
export { Registry, type HandlerClass } from './registry/registry.js';
export type {
  ChangeContext,
  ChangeHandlerFn,
  ChangeHandlerOptions,
  ChangeHandlerSpec,
  ChangeKind,
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
export { TemporaryError, PermanentError, HandlerRetriesError, HandlerTimeoutError } from './handler/errors.js';
export { PRESENT, ABSENT, type MetaFilter, type ValueFilter } from './handler/filters.js';
export type { Patch, MergePatch, MergePatchValue } from './handler/patch.js';
export type { Diff, DiffItem } from './state/diff.js';
export type { ChangeReason, ProgressRecord } from './state/progress.js';
export { FINALIZER, DIFF_BASE_KEY, progressKey } from './state/keys.js';
export { events, EventPoster, type EventType } from './posting/events.js';
export { ObjectApi, type JsonPatchOp } from './api/object-api.js';
export type { KubeObject } from './objects/kube-object.js';
export type { ObjectEvent, WatchEvent, SyncedEvent } from './watching/events.js';
export { watchResource, type WatchStreamOptions } from './watching/watch-stream.js';
export { WatchHub, type WatchScope, type WatchTuning } from './watching/watch-hub.js';
export { resolveResource } from './watching/resource-resolver.js';
export { Backoff, type BackoffOptions } from './clock/backoff.js';
export { Reactor, type ReactorOptions, type ObjectBatch, type ObjectProcessor, type ProcessResult } from './reactor/reactor.js';
export { ApiClient, type RequestInit, type Query, type RequestCounter } from './api/api-client.js';
export { loadKubeconfig, Kubeconfig, KubeconfigError, type ClusterAccess, type KubeconfigSource, type NamedEntry } from './api/kubeconfig.js';
export { ApiError, isGone, type KubeStatus } from './api/api-error.js';
export { discoverResource, ResourceNotFoundError } from './api/discovery.js';
export type { Resource, ResourceSelector } from './api/resource.js';
export { createLogger, silentLogger, type Logger, type LoggerOptions, type LogFormat } from './observability/logger.js';
export { MetricsRecorder, Histogram, noMetrics, type Metrics, type CounterName, type GaugeName, type HistogramName, type Labels } from './observability/metrics.js';
