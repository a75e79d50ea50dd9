import type { ApiClient } from '../api/api-client.js';
import { silentLogger, type Logger } from '../observability/logger.js';
import type { KubeObject } from '../objects/kube-object.js';

/** Kubernetes Event types. */
export type EventType = 'Normal' | 'Warning';

/** What an Event is about: any object with a kind and metadata (typed objects without an index signature included). */
export type InvolvedObject = Pick<KubeObject, 'apiVersion' | 'kind' | 'metadata'>;

/** Where Events go: an {@link EventPoster}, or a fake in specs. */
export interface EventSink {
  post(object: InvolvedObject, type: EventType, reason: string, message: string): void;
}

const MAX_MESSAGE = 1024;

function clip(message: string): string {
  if (message.length <= MAX_MESSAGE) return message;
  const half = (MAX_MESSAGE - 3) / 2;
  return `${message.slice(0, Math.floor(half))}...${message.slice(-Math.ceil(half))}`;
}

/**
 * Posts core/v1 Events about objects from a background queue, so handlers never wait for them.
 * A failure to post is logged and dropped, never thrown. `component` is the Events' `source.component`.
 */
export class EventPoster implements EventSink {
  private queue: Promise<void> = Promise.resolve();
  private pending = 0;

  constructor(
    private readonly client: ApiClient,
    private readonly logger: Logger = silentLogger(),
    private readonly component = 'konductor',
  ) {}

  post(object: InvolvedObject, type: EventType, reason: string, message: string): void {
    const meta = object.metadata ?? {};
    const namespace = meta.namespace ?? 'default';
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const body = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { generateName: `${meta.name ?? 'object'}.`, namespace },
      involvedObject: {
        apiVersion: object.apiVersion,
        kind: object.kind,
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resourceVersion: meta.resourceVersion,
      },
      type,
      reason,
      message: clip(message),
      source: { component: this.component },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
    this.pending += 1;
    this.queue = this.queue
      .then(() => this.client.request('POST', `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`, { body }))
      .then(
        () => undefined,
        (error: unknown) =>
          this.logger.warn({ err: error instanceof Error ? error.message : String(error), reason, name: meta.name, namespace }, 'could not post an Event'),
      )
      .finally(() => {
        this.pending -= 1;
      });
  }

  /** Resolves when every queued Event has been posted (or given up). */
  flush(): Promise<void> {
    return this.queue;
  }

  get queued(): number {
    return this.pending;
  }
}
