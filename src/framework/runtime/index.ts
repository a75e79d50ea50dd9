/**
 * `konductor/runtime`: the building blocks an operator is made of, for those who assemble one
 * differently or test their parts — the timer and daemon engines, the reactor, shared watches,
 * resource discovery, the object API, the framework's bookkeeping keys on objects, metrics.
 *
 * Handler authors need none of this: `konductor` has the decorators, contexts and `createOperator`.
 * A name is exported from one of the two entry points, never both (the few names still in both
 * are marked below).
 * @packageDocumentation
 */

// Engines: timers and daemons per object, and the timer schedule (a pure function).
export { TimerEngine, type TimerEngineOptions } from '../engines/timers.js';
export { DaemonEngine, type DaemonEngineOptions } from '../engines/daemons.js';
export { nextRunAt, type TimerSchedule, type TimerState } from '../engines/schedule.js';

// Time: durations and retry backoff.
export { toMilliseconds } from '../clock/duration.js';
export { Backoff, type BackoffOptions } from '../clock/backoff.js';

// The reactor: per-object serialisation of watch events, with bounded concurrency.
export {
  Reactor,
  type ReactorOptions,
  type ObjectBatch,
  type ObjectProcessor,
  type ProcessResult,
} from '../reactor/reactor.js';

// Watching: one stream per resource and scope, shared by every route that needs it.
export type { ObjectEvent, WatchEvent, SyncedEvent } from '../watching/events.js';
export { watchResource, type WatchStreamOptions } from '../watching/watch-stream.js';
export { WatchHub, type WatchScope, type WatchTuning } from '../watching/watch-hub.js';

// The API beneath the handlers' ApiClient: discovery, typed object access, kubeconfig parsing.
export { ObjectApi, type JsonPatchOp } from '../api/object-api.js';
export { discoverResource, ResourceNotFoundError } from '../api/discovery.js';
export type { Resource, ResourceSelector } from '../api/resource.js';
export { isGone } from '../api/api-error.js';
export { Kubeconfig, type NamedEntry } from '../api/kubeconfig.js';

// What the framework keeps on objects: its finalizer, the diff base and per-handler progress, named by
// the operator's identity (the constants are the default identity's).
export { FINALIZER, DIFF_BASE_KEY, progressKey } from '../state/keys.js';
export { Identity, InvalidIdentityError } from '../state/identity.js';
export { MemoryBudgetError } from '../watching/memory-budget.js';
export type { ProgressRecord } from '../state/progress.js';

// Events and metrics as the engines take them.
export { EventPoster, type EventPosterOptions } from '../posting/events.js';
export {
  MetricsRecorder,
  Histogram,
  noMetrics,
  type Metrics,
  type CounterName,
  type GaugeName,
  type HistogramName,
  type Labels,
} from '../observability/metrics.js';

// Admission webhook certificates: a CA and serving certificate kept in a Secret, rotated without a failed admission.
export {
  CertificateStore,
  type CertificateBundle,
  type CertificateStoreOptions,
} from '../admission/certificate-store.js';
export {
  issueAuthority,
  issueServingCertificate,
  issueClientCertificate,
  type IssuedCertificate,
  type AuthorityOptions,
  type ServingOptions,
  type ClientOptions,
} from '../admission/certificates.js';
// Admission webhooks: the HTTPS server the API server calls, and the path of each webhook.
export {
  WebhookServer,
  type WebhookServerOptions,
  type ServingCertificate,
} from '../admission/webhook-server.js';
export { webhookPath, conversionPath } from '../admission/webhook-paths.js';
