/** The change processor on a fake API, fed by hand as the watch would feed it: shared by the processor's spec files. */
import type { ResourceSelector } from '../../../src/framework/api/resource.js';
import { ChangeProcessor } from '../../../src/framework/processing/change-processor.js';
import type { ChangeProcessorOptions } from '../../../src/framework/processing/change-processor-options.js';
import { TemporaryError } from '../../../src/framework/intents/errors.js';
import { silentLogger, type Logger } from '../../../src/framework/observability/logger.js';
import type { ProcessResult } from '../../../src/framework/reactor/reactor.js';
import type {
  ChangeContext,
  ChangeHandlerOptions,
  ChangeHandlerSpec,
} from '../../../src/framework/intents/handler-specs.js';
import {
  essenceOf,
  readDiffBase,
  serializeDiffBase,
  type Essence,
} from '../../../src/framework/state/essence.js';
import { parseFieldPath } from '../../../src/framework/objects/field-path.js';
import { DIFF_BASE_KEY } from '../../../src/framework/state/keys.js';
import {
  readProgress,
  type ChangeReason,
  type ProgressRecord,
} from '../../../src/framework/state/progress.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import type { ObjectEvent } from '../../../src/framework/watching/watch-events.js';
import { installFakeClock, type FakeClock } from '../../support/fake-clock.js';
import { WIDGET_API_VERSION, widget, widgetResource } from '../../support/widget-objects.js';
import { FakeObjectApi, FakePoster } from './fake-object-api.js';

export const SELECTOR: ResourceSelector = {
  apiVersion: WIDGET_API_VERSION,
  name: widgetResource.plural,
};
/** The UID of the Widget every spec here handles (the fixture's default). */
export const UID = widget().metadata!.uid!;
export const OTHER_FINALIZER = 'example.com/keep';

// ---------------------------------------------------------------------------------------------
// Objects (built with `widget` from support/widget-objects: a Widget as a user creates it, never handled)

/** `object` as the processor leaves it once handled: its essence (with `extraFields`) stored as the diff-base. */
export function handled(object: KubeObject, extraFields: string[] = []): KubeObject {
  const essence = essenceOf(
    object,
    extraFields.map((field) => parseFieldPath(field)),
  );
  return {
    ...object,
    metadata: {
      ...object.metadata,
      annotations: { ...object.metadata?.annotations, [DIFF_BASE_KEY]: serializeDiffBase(essence) },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Handlers

export type Handler = ChangeHandlerSpec & { calls: ChangeContext[] };

/** A handler spec that records every context it is called with, then runs `body` (if any). */
export function handler(
  kind: ChangeReason,
  id: string,
  options: ChangeHandlerOptions = {},
  body?: (context: ChangeContext) => unknown,
): Handler {
  const calls: ChangeContext[] = [];
  return {
    kind,
    id,
    resource: SELECTOR,
    options,
    calls,
    fn: (context) => {
      calls.push(context);
      return body?.(context);
    },
  };
}

export function failing(
  kind: ChangeReason,
  id: string,
  options: ChangeHandlerOptions = {},
): Handler {
  return handler(kind, id, options, () => {
    throw new Error('boom');
  });
}

/** A create handler that keeps asking for an hour, so the cause stays open and other handlers' records stay on the object. */
export function parked(): Handler {
  return handler('create', 'parked', {}, () => {
    throw new TemporaryError('not yet', { delay: 3600 });
  });
}

// ---------------------------------------------------------------------------------------------
// Harness

/**
 * A processor on a fake API holding one object, fed by hand as the watch would feed it. It installs the
 * shared fake clock (2024-05-01T12:00:00Z): specs using it uninstall it in an `afterEach`.
 */
export class Harness {
  readonly clock: FakeClock = installFakeClock({ now: '2024-05-01T12:00:00.000Z' });
  readonly api: FakeObjectApi;
  readonly poster = new FakePoster();
  readonly processor: ChangeProcessor;

  constructor(
    handlers: readonly ChangeHandlerSpec[],
    initial: KubeObject | FakeObjectApi,
    readonly logger: Logger = silentLogger(),
    extra: Partial<ChangeProcessorOptions> = {},
  ) {
    this.api = initial instanceof FakeObjectApi ? initial : new FakeObjectApi(initial);
    this.processor = new ChangeProcessor({
      api: this.api.asObjectApi(),
      handlers,
      logger,
      poster: this.poster.asEventPoster(),
      clock: this.clock,
      ...extra,
    });
  }

  /** States of the object already delivered (the watch's position in the fake's history). */
  private delivered = 0;

  /**
   * Feeds the processor as the watch would: every state stored since the previous delivery, the newest
   * as `latest`; or only `object`, as when the watch is behind or a DELETED event arrives.
   */
  deliver(
    options: {
      object?: KubeObject;
      type?: ObjectEvent['type'];
      fromList?: boolean;
      /** Aborted once this replica stops handling objects. */
      signal?: AbortSignal;
    } = {},
  ): Promise<ProcessResult> {
    const type = options.type ?? 'MODIFIED';
    const fromList = options.fromList ?? false;
    let objects: KubeObject[];
    if (options.object) {
      objects = [options.object];
    } else {
      objects = this.api.history.slice(this.delivered);
      this.delivered = this.api.history.length;
      if (objects.length === 0) objects = [this.api.object];
    }
    const events: ObjectEvent[] = objects.map((object) => ({ type, object, fromList }));
    return this.processor.process({
      uid: UID,
      latest: events[events.length - 1]!,
      events,
      signal: options.signal ?? new AbortController().signal,
    });
  }

  /** Changes the stored object as a user would (a new resourceVersion). */
  edit(
    change: (
      object: KubeObject & { spec: Record<string, unknown>; status: Record<string, unknown> },
    ) => void,
  ): void {
    const object = this.api.object as KubeObject & {
      spec: Record<string, unknown>;
      status: Record<string, unknown>;
    };
    object.status ??= {};
    change(object);
    this.api.put(object);
  }

  record(id: string): ProgressRecord | undefined {
    return readProgress(this.api.object, id);
  }

  diffBase(): Essence | undefined {
    return readDiffBase(this.api.object);
  }

  /** Milliseconds from now until the handler's next attempt. */
  delayOf(id: string): number {
    const delayed = this.record(id)?.delayed;
    if (delayed === undefined) throw new Error(`${id} has no delayed attempt`);
    return Date.parse(delayed) - this.clock.now();
  }
}

export function requeueOf(result: ProcessResult): number | undefined {
  return result ? result.requeueAfterMs : undefined;
}
