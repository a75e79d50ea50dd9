import {
  ADMISSION_OPERATIONS,
  type AdmissionOperation,
  type AdmissionUser,
} from '../intents/admission-specs.js';
import type { KubeObject } from '../objects/kube-object.js';
import { isPlainObject } from '../objects/plain-object.js';

/** One `admission.k8s.io/v1` request, checked: what the dispatcher and the handler context read. */
export interface AdmissionRequest {
  uid: string;
  /** The object's group/version/kind as the API server names it. */
  kind: { group: string; version: string; kind: string };
  /** The resource the request is for (`resource` is the plural). */
  resource: { group: string; version: string; resource: string };
  subResource: string | undefined;
  name: string | undefined;
  namespace: string | undefined;
  operation: AdmissionOperation;
  userInfo: AdmissionUser;
  /** The new object (absent on DELETE). */
  object: KubeObject | undefined;
  /** The stored object (UPDATE, DELETE). */
  oldObject: KubeObject | undefined;
  dryRun: boolean;
}

/** One `admission.k8s.io/v1` response. */
export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code: number; message: string };
  /** Base64 of the JSON patch. */
  patch?: string;
  patchType?: 'JSONPatch';
  warnings?: string[];
}

/** A parsed review, or why it cannot be answered (sent back as a 400). */
export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

export const ADMISSION_API_VERSION = 'admission.k8s.io/v1';

function optionalString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function stringList(value: unknown): string[] {
  return Array.isArray(value)
    ? value.filter((item): item is string => typeof item === 'string')
    : [];
}

function groupVersion(
  value: unknown,
  last: 'kind' | 'resource',
): Record<string, string> | undefined {
  if (!isPlainObject(value) || typeof value.version !== 'string' || typeof value[last] !== 'string')
    return undefined;
  return {
    group: typeof value.group === 'string' ? value.group : '',
    version: value.version,
    [last]: value[last] as string,
  };
}

function userInfoOf(value: unknown): AdmissionUser {
  const info = isPlainObject(value) ? value : {};
  const extra: Record<string, string[]> = {};
  if (isPlainObject(info.extra))
    for (const [key, values] of Object.entries(info.extra)) extra[key] = stringList(values);
  const user: AdmissionUser = {
    username: typeof info.username === 'string' ? info.username : '',
    groups: stringList(info.groups),
    extra,
  };
  if (typeof info.uid === 'string') user.uid = info.uid;
  return user;
}

/** `object`/`oldObject`: a record, or absent (`null` is how the API server says absent). */
function objectField(
  request: Record<string, unknown>,
  field: string,
): Parsed<KubeObject | undefined> {
  const value = request[field];
  if (value === undefined || value === null) return { ok: true, value: undefined };
  if (!isPlainObject(value)) return { ok: false, problem: `request.${field} must be an object` };
  if (value.metadata !== undefined && !isPlainObject(value.metadata))
    return { ok: false, problem: `request.${field}.metadata must be an object` };
  return { ok: true, value: value as KubeObject };
}

/**
 * Reads an AdmissionReview as the API server sends it. Everything in it is checked, since anyone who
 * reaches the port can send anything: a problem is described, never thrown.
 */
export function parseAdmissionReview(body: unknown): Parsed<AdmissionRequest> {
  if (!isPlainObject(body))
    return { ok: false, problem: 'expected a JSON object (an AdmissionReview)' };
  if (body.apiVersion !== ADMISSION_API_VERSION || body.kind !== 'AdmissionReview') {
    return {
      ok: false,
      problem: `expected apiVersion ${ADMISSION_API_VERSION} and kind AdmissionReview, got ${JSON.stringify(String(body.apiVersion))} ${JSON.stringify(String(body.kind))}`,
    };
  }
  const request = body.request;
  if (!isPlainObject(request)) return { ok: false, problem: 'request is missing' };
  if (typeof request.uid !== 'string' || request.uid === '')
    return { ok: false, problem: 'request.uid is missing' };
  const operation = request.operation;
  if (
    typeof operation !== 'string' ||
    !ADMISSION_OPERATIONS.includes(operation as AdmissionOperation)
  ) {
    return {
      ok: false,
      problem: `request.operation must be one of ${ADMISSION_OPERATIONS.join(', ')}`,
    };
  }
  const kind = groupVersion(request.kind, 'kind');
  const resource = groupVersion(request.resource, 'resource');
  if (!kind || !resource)
    return {
      ok: false,
      problem: 'request.kind and request.resource must name a group, version and kind/resource',
    };
  const object = objectField(request, 'object');
  if (!object.ok) return object;
  const oldObject = objectField(request, 'oldObject');
  if (!oldObject.ok) return oldObject;
  if (request.dryRun !== undefined && typeof request.dryRun !== 'boolean')
    return { ok: false, problem: 'request.dryRun must be a boolean' };
  return {
    ok: true,
    value: {
      uid: request.uid,
      kind: kind as AdmissionRequest['kind'],
      resource: resource as AdmissionRequest['resource'],
      subResource: optionalString(request.subResource),
      name: optionalString(request.name),
      namespace: optionalString(request.namespace),
      operation: operation as AdmissionOperation,
      userInfo: userInfoOf(request.userInfo),
      object: object.value,
      oldObject: oldObject.value,
      dryRun: request.dryRun === true,
    },
  };
}

/** The AdmissionReview that carries a response. */
export function admissionReview(response: AdmissionResponse): {
  apiVersion: string;
  kind: 'AdmissionReview';
  response: AdmissionResponse;
} {
  return { apiVersion: ADMISSION_API_VERSION, kind: 'AdmissionReview', response };
}
