import type { KubeObject } from '../objects/kube-object.js';
import type { Parsed } from './admission-review.js';
import { isPlainObject } from '../objects/plain-object.js';

/** One `apiextensions.k8s.io/v1` conversion request, checked. */
export interface ConversionRequest {
  uid: string;
  /** `group/version` every object must be converted to. */
  desiredAPIVersion: string;
  objects: KubeObject[];
}

/** One conversion response: every object converted, or a failure naming the one that could not be. */
export interface ConversionResponse {
  uid: string;
  convertedObjects: KubeObject[];
  result: { status: 'Success' } | { status: 'Failure'; message: string };
}

export const CONVERSION_API_VERSION = 'apiextensions.k8s.io/v1';

/** Reads a ConversionReview as the API server sends it; a problem is described, never thrown. */
export function parseConversionReview(body: unknown): Parsed<ConversionRequest> {
  if (!isPlainObject(body))
    return { ok: false, problem: 'expected a JSON object (a ConversionReview)' };
  if (body.apiVersion !== CONVERSION_API_VERSION || body.kind !== 'ConversionReview') {
    return {
      ok: false,
      problem: `expected apiVersion ${CONVERSION_API_VERSION} and kind ConversionReview, got ${JSON.stringify(String(body.apiVersion))} ${JSON.stringify(String(body.kind))}`,
    };
  }
  const request = body.request;
  if (!isPlainObject(request)) return { ok: false, problem: 'request is missing' };
  if (typeof request.uid !== 'string' || request.uid === '')
    return { ok: false, problem: 'request.uid is missing' };
  const desired = request.desiredAPIVersion;
  if (typeof desired !== 'string' || !/^[^/]+\/[^/]+$/.test(desired))
    return { ok: false, problem: 'request.desiredAPIVersion must be group/version' };
  if (!Array.isArray(request.objects))
    return { ok: false, problem: 'request.objects must be a list' };
  const index = request.objects.findIndex(
    (object) => !isPlainObject(object) || typeof object.apiVersion !== 'string',
  );
  if (index >= 0)
    return { ok: false, problem: `request.objects[${index}] must be an object with an apiVersion` };
  return {
    ok: true,
    value: {
      uid: request.uid,
      desiredAPIVersion: desired,
      objects: request.objects as KubeObject[],
    },
  };
}

/** The ConversionReview that carries a response. */
export function conversionReview(response: ConversionResponse): {
  apiVersion: string;
  kind: 'ConversionReview';
  response: ConversionResponse;
} {
  return { apiVersion: CONVERSION_API_VERSION, kind: 'ConversionReview', response };
}
