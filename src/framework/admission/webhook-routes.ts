import type { ApiClient } from '../api/api-client.js';
import { splitApiVersion, type Resource } from '../api/resource.js';
import type { AdmissionSpec, ConversionSpec } from '../intents/admission-specs.js';
import type { Cache, Indexes } from '../intents/cache-contract.js';
import type { Memo } from '../intents/memo.js';
import type { Logger } from '../observability/logger.js';
import type { Registry } from '../registry/registry.js';
import { dispatchAdmission } from './admission-dispatch.js';
import {
  admissionReview,
  parseAdmissionReview,
  type AdmissionRequest,
} from './admission-review.js';
import { dispatchConversion } from './conversion-dispatch.js';
import { conversionReview, parseConversionReview } from './conversion-review.js';
import { conversionPath, webhookPath } from './webhook-paths.js';

/** What answering a review needs besides the handlers. */
export interface ReviewScope {
  logger: Logger;
  client: ApiClient;
  /** The discovered resource of a handler's `apiVersion` and name, when the operator knows it. */
  resolve: (apiVersion: string, name: string) => Resource | undefined;
  cache?: Cache;
  indexes?: Indexes;
  memo?: Memo;
}

/** An answer: a JSON review (200), or a refusal of the HTTP request itself with a reason. */
export type ReviewAnswer = { status: 200; body: unknown } | { status: 400 | 404; problem: string };

/** One path the server answers, and how. */
export type WebhookRoute =
  { kind: 'admission'; spec: AdmissionSpec } | { kind: 'conversion'; spec: ConversionSpec };

/** Every path of the registry's handlers; a clash (two ids encoding alike) fails here, before serving. */
export function webhookRoutes(registry: Registry): Map<string, WebhookRoute> {
  const routes = new Map<string, WebhookRoute>();
  const add = (path: string, route: WebhookRoute): void => {
    if (routes.has(path))
      throw new Error(`two webhook handlers would be served at ${path}; give one another id`);
    routes.set(path, route);
  };
  for (const spec of registry.admission()) add(webhookPath(spec), { kind: 'admission', spec });
  for (const spec of registry.conversions())
    add(conversionPath(spec.group, spec.name), { kind: 'conversion', spec });
  return routes;
}

/** The resource a request is for: discovered when the operator knows it, else as the request names it. */
function resourceOf(spec: AdmissionSpec, request: AdmissionRequest, scope: ReviewScope): Resource {
  const known = scope.resolve(spec.resource.apiVersion, spec.resource.name);
  if (known) return known;
  const { group, version } = splitApiVersion(spec.resource.apiVersion);
  return {
    group,
    version,
    plural: request.resource.resource,
    kind: request.kind.kind,
    namespaced: request.namespace !== undefined,
    hasStatus: false,
  };
}

/** Answers one parsed JSON body sent to a route. Never throws (the dispatchers do not). */
export async function answerReview(
  route: WebhookRoute,
  body: unknown,
  scope: ReviewScope,
): Promise<ReviewAnswer> {
  if (route.kind === 'admission') {
    const parsed = parseAdmissionReview(body);
    if (!parsed.ok) return { status: 400, problem: parsed.problem };
    const request = parsed.value;
    const { group, resource } = request.resource;
    const expected = splitApiVersion(route.spec.resource.apiVersion).group;
    if (group !== expected)
      return {
        status: 400,
        problem: `this webhook admits ${route.spec.resource.name} of group '${expected}', not ${resource} of '${group}'`,
      };
    const response = await dispatchAdmission(route.spec, request, {
      ...scope,
      resource: resourceOf(route.spec, request, scope),
    });
    return { status: 200, body: admissionReview(response) };
  }
  const parsed = parseConversionReview(body);
  if (!parsed.ok) return { status: 400, problem: parsed.problem };
  return {
    status: 200,
    body: conversionReview(await dispatchConversion(route.spec, parsed.value, scope.logger)),
  };
}
