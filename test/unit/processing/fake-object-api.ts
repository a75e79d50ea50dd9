/**
 * In-memory stand-ins for what the change processor talks to: one stored object behind an
 * {@link ObjectApi}-shaped API (merge patches, JSON patches, reads), and an Event poster.
 *
 * The API behaves like a Kubernetes server where it matters to the processor: every write bumps
 * `metadata.resourceVersion`; a merge PATCH on `status` changes only status, and one on the object
 * ignores status (the resource has a status subresource); a JSON patch whose `test` fails answers
 * 422 and changes nothing; a merge PATCH made to land on an older version answers 409. Every call is recorded, and the next call can be made to fail. It holds a
 * Widget (support/widget-objects) unless given another resource.
 */
import { ApiError } from '../../../src/framework/api/api-error.js';
import type { JsonPatchOp, ObjectApi } from '../../../src/framework/api/object-api.js';
import type { Resource } from '../../../src/framework/api/resource.js';
import { applyMergePatch } from '../../../src/framework/intents/patch.js';
import type { EventPoster, EventType } from '../../../src/framework/posting/events.js';
import { jsonEqual } from '../../../src/framework/state/diff.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { widgetResource } from '../../support/widget-objects.js';

export type ApiMethod = 'get' | 'mergePatch' | 'jsonPatch';

/** One request the fake received (failed ones included). */
export type ApiCall =
  | { method: 'get'; namespace: string | undefined; name: string }
  | {
      method: 'mergePatch';
      namespace: string | undefined;
      name: string;
      body: Record<string, unknown>;
      subresource?: string;
    }
  | { method: 'jsonPatch'; namespace: string | undefined; name: string; ops: JsonPatchOp[] };

function clone<T>(value: T): T {
  return structuredClone(value);
}

function isContainer(value: unknown): value is Record<string, unknown> | unknown[] {
  return value !== null && typeof value === 'object';
}

export class FakeObjectApi {
  readonly calls: ApiCall[] = [];
  /** The `resourceVersion` each merge PATCH was to land on, in order (undefined: any). */
  readonly fences: (string | undefined)[] = [];
  /** Every state the object was stored in, oldest first (what a watch would deliver). */
  readonly history: KubeObject[] = [];
  private stored: KubeObject | undefined;
  private readonly onNextWrite: (() => void)[] = [];
  private version = 0;
  private readonly failures: { status: number; method?: ApiMethod; retryAfterSeconds?: number }[] =
    [];

  constructor(
    initial?: KubeObject,
    readonly resource: Resource = widgetResource,
  ) {
    if (initial) this.put(initial);
  }

  /** The fake typed as the real API, for the processor. */
  asObjectApi(): ObjectApi {
    return this as unknown as ObjectApi;
  }

  /** A copy of the stored object. */
  get object(): KubeObject {
    if (!this.stored) throw new Error('fake API: no object stored');
    return clone(this.stored);
  }

  /** Stores `object` as if someone else wrote it: keeps its resourceVersion when it is newer, else bumps it. */
  put(object: KubeObject): KubeObject {
    const copy = clone(object);
    const given = Number(copy.metadata?.resourceVersion ?? '0');
    this.version = Number.isFinite(given) && given > this.version ? given : this.version + 1;
    copy.metadata = { ...copy.metadata, resourceVersion: String(this.version) };
    this.stored = copy;
    this.history.push(clone(copy));
    return clone(copy);
  }

  /** Forgets the object: later calls answer 404. */
  remove(): void {
    this.stored = undefined;
  }

  /** Runs `what` when the next write arrives, before it lands: what happened while it was on its way. */
  meanwhile(what: () => void): void {
    this.onNextWrite.push(what);
  }

  /** Makes the next call (of `method`, or of any method) fail with `status`; queued in order. */
  failNext(status: number, method?: ApiMethod, retryAfterSeconds?: number): void {
    this.failures.push({ status, method, retryAfterSeconds });
  }

  /** The writes (merge and JSON patches) received, failed ones included. */
  get writes(): Exclude<ApiCall, { method: 'get' }>[] {
    return this.calls.filter(
      (call): call is Exclude<ApiCall, { method: 'get' }> => call.method !== 'get',
    );
  }

  async get(namespace: string | undefined, name: string): Promise<KubeObject> {
    this.calls.push({ method: 'get', namespace, name });
    this.maybeFail('get');
    return clone(this.current(name));
  }

  async mergePatch(
    namespace: string | undefined,
    name: string,
    body: Record<string, unknown>,
    subresource?: string,
    ifVersion?: string,
  ): Promise<KubeObject> {
    this.calls.push({
      method: 'mergePatch',
      namespace,
      name,
      body: clone(body),
      ...(subresource ? { subresource } : {}),
    });
    this.fences.push(ifVersion);
    this.onNextWrite.shift()?.();
    this.maybeFail('mergePatch');
    const current = this.current(name);
    if (ifVersion !== undefined && ifVersion !== current.metadata?.resourceVersion)
      throw new ApiError(
        409,
        `fake API: the object is at ${current.metadata?.resourceVersion}, not ${ifVersion}`,
      );
    let next: KubeObject;
    if (subresource === 'status') {
      next = { ...current, status: applyMergePatch(current, { status: body.status ?? {} }).status };
    } else if (subresource === undefined) {
      const { status: _ignored, ...rest } = body;
      next = applyMergePatch(current, this.resource.hasStatus ? rest : body);
    } else {
      throw new ApiError(404, `fake API: no subresource ${subresource}`);
    }
    return this.store(next);
  }

  async jsonPatch(
    namespace: string | undefined,
    name: string,
    ops: readonly JsonPatchOp[],
  ): Promise<KubeObject> {
    this.calls.push({ method: 'jsonPatch', namespace, name, ops: clone([...ops]) });
    this.maybeFail('jsonPatch');
    const next = clone(this.current(name));
    for (const op of ops) applyJsonOp(next, op);
    return this.store(next);
  }

  private current(name: string): KubeObject {
    if (!this.stored || this.stored.metadata?.name !== name)
      throw new ApiError(404, `fake API: widgets "${name}" not found`);
    return this.stored;
  }

  private store(object: KubeObject): KubeObject {
    this.version += 1;
    this.stored = {
      ...object,
      metadata: { ...object.metadata, resourceVersion: String(this.version) },
    };
    this.history.push(clone(this.stored));
    return clone(this.stored);
  }

  private maybeFail(method: ApiMethod): void {
    const index = this.failures.findIndex(
      (failure) => failure.method === undefined || failure.method === method,
    );
    if (index < 0) return;
    const [failure] = this.failures.splice(index, 1);
    throw new ApiError(
      failure!.status,
      `fake API: ${method} failed with ${failure!.status}`,
      undefined,
      failure!.retryAfterSeconds,
    );
  }
}

/** Applies one RFC 6902 operation in place; only `test`, `add` and `remove` under `/metadata`, as the processor uses. */
function applyJsonOp(object: KubeObject, op: JsonPatchOp): void {
  const keys = op.path
    .split('/')
    .slice(1)
    .map((key) => key.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (keys[0] !== 'metadata' || keys.length < 2)
    throw new Error(`fake API: unsupported JSON patch path ${op.path}`);
  let parent: unknown = object;
  for (const key of keys.slice(0, -1)) {
    parent = isContainer(parent) ? (parent as Record<string, unknown>)[key] : undefined;
  }
  const last = keys[keys.length - 1]!;
  if (!isContainer(parent))
    throw new ApiError(422, `fake API: ${op.op} ${op.path}: no such parent`);
  const fail = (why: string): never => {
    throw new ApiError(422, `fake API: ${op.op} ${op.path}: ${why}`);
  };
  if (Array.isArray(parent)) {
    const index = last === '-' ? parent.length : Number(last);
    if (!Number.isInteger(index) || index < 0) fail('bad index');
    switch (op.op) {
      case 'test':
        if (index >= parent.length || !jsonEqual(parent[index], op.value)) fail('test failed');
        return;
      case 'add':
        if (index > parent.length) fail('index out of range');
        parent.splice(index, 0, clone(op.value));
        return;
      case 'remove':
        if (index >= parent.length) fail('index out of range');
        parent.splice(index, 1);
        return;
      default:
        throw new Error(`fake API: unsupported JSON patch op ${op.op}`);
    }
  }
  const record = parent as Record<string, unknown>;
  switch (op.op) {
    case 'test':
      if (!jsonEqual(record[last], op.value)) fail('test failed');
      return;
    case 'add':
      record[last] = clone(op.value);
      return;
    case 'remove':
      if (!(last in record)) fail('no such member');
      delete record[last];
      return;
    default:
      throw new Error(`fake API: unsupported JSON patch op ${op.op}`);
  }
}

/** One Event the processor posted. */
export interface PostedEvent {
  object: KubeObject;
  type: EventType;
  reason: string;
  message: string;
}

/** Records Events instead of sending them. */
export class FakePoster {
  readonly posted: PostedEvent[] = [];

  asEventPoster(): EventPoster {
    return this as unknown as EventPoster;
  }

  post(object: KubeObject, type: EventType, reason: string, message: string): void {
    this.posted.push({ object: clone(object), type, reason, message });
  }

  /** The Events posted with `reason`. */
  withReason(reason: string): PostedEvent[] {
    return this.posted.filter((event) => event.reason === reason);
  }
}
