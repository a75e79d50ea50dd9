/**
 * Konductor: Kubernetes operators in TypeScript, in the style of Kopf.
 *
 * This entry point holds what an operator author writes against: the decorators and the handler
 * contexts they receive, kinds, the errors a handler throws, Events, the API client, logging, and
 * `createOperator` to run handlers in a process of one's own. Option and handler-function types are
 * inferred from the decorators rather than exported. The parts the operator is made of (engines,
 * reactor, watches, the framework's bookkeeping keys) are internal: no entry point exports them.
 *
 * @example
 * ```ts
 * import { defineKind, on, type ChangeContext, type CustomObject } from 'konductor';
 *
 * type Widget = CustomObject<{ size: number }, { phase?: string }>;
 * const Widget = defineKind<Widget>('example.com/v1', 'Widget', 'widgets');
 *
 * export class Widgets {
 *   @on.create(Widget)
 *   async created({ patch }: ChangeContext<Widget>): Promise<void> {
 *     patch.status.phase = 'Ready';
 *   }
 * }
 * ```
 * @packageDocumentation
 * @module konductor
 */
import './registry/metadata.js';

// Declaring handlers: decorators, or plain functions in a Registry.
export { on } from './decorators/on.js';
export { timer } from './decorators/timer.js';
export { daemon } from './decorators/daemon.js';
export {
  watch,
  type ReconcileContext,
  type ReconcileResult,
  type ObjectKey,
} from './intents/reconcile-specs.js';
export { Registry } from './registry/registry.js';
export { PRESENT, ABSENT } from './intents/filters.js';
export type { DurationInput } from './clock/duration.js';

// Kinds: one value names a resource and carries its types.
export { defineKind, type Kind, type CustomObject } from './objects/kind.js';
export * as kinds from './objects/builtin-kinds.js';
export type { KubeObject } from './objects/kube-object.js';

// What a handler receives.
export type {
  ObjectContext,
  ChangeContext,
  FieldChangeContext,
  TimerContext,
  DaemonContext,
  EventContext,
} from './intents/handler-specs.js';
export type { OwnedContext } from './intents/owned-specs.js';
export type { ActivityContext } from './intents/activity-specs.js';
export type {
  AdmissionContext,
  MutationContext,
  ConversionContext,
} from './intents/admission-specs.js';
export type { FilterContext } from './intents/filter-context.js';
export type { IndexContext, Cache, Indexes } from './intents/cache-contract.js';
export type { Patch } from './intents/patch.js';
export type { Diff, DiffItem } from './state/diff.js';
export type { Condition, Conditions } from './intents/conditions.js';
export type { Memo } from './intents/memo.js';

// What a handler throws.
export {
  TemporaryError,
  PermanentError,
  HandlerRetriesError,
  HandlerTimeoutError,
  AdmissionError,
} from './intents/errors.js';
export { StartupError } from './runtime/operator-activities.js';

// Talking to the cluster from a handler.
export { ApiClient } from './api/api-client.js';
export { ApiError } from './api/api-error.js';
export { ResourceClient } from './api/resource-client.js';
export { adopt, ownerReference, type OwnerReference } from './objects/owner-reference.js';
export { events, type EventType } from './posting/events.js';

// Running an operator in a process of one's own.
export { createOperator, Operator, type OperatorOptions } from './runtime/operator.js';
export { HealthServerError } from './runtime/health-server.js';
export { loadKubeconfig, KubeconfigError } from './api/kubeconfig.js';
export {
  createLogger,
  silentLogger,
  type Logger,
  type LoggerOptions,
} from './observability/logger.js';
export { loadTracing, type Tracing, type TracingOptions } from './observability/tracing.js';
