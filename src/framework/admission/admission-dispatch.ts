import { inSpan } from '../observability/tracing.js';
import type { ApiClient } from '../api/api-client.js';
import type { Resource } from '../api/resource.js';
import { AttemptTimeoutError, withTimeLimit } from '../clock/time-limit.js';
import {
  ADMISSION_DEFAULTS,
  type AdmissionSpec,
  type MutationContext,
} from '../intents/admission-specs.js';
import type { Cache, Indexes } from '../intents/cache-contract.js';
import { currentCacheAccess } from '../intents/cache-scope.js';
import { AdmissionError, describeError } from '../intents/errors.js';
import { matchesObject, PRESENT, type ObjectFilters } from '../intents/filters.js';
import { ObjectMemos, type Memo } from '../intents/memo.js';
import { objectParts } from '../intents/object-parts.js';
import { applyMergePatch, emptyPatch, prune, type Patch } from '../intents/patch.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import type { AdmissionRequest, AdmissionResponse } from './admission-review.js';
import { jsonPatchDiff } from './json-patch.js';

/** What an admission handler runs with besides the request: the operator's parts. */
export interface AdmissionScope {
  resource: Resource;
  client: ApiClient;
  logger: Logger;
  /** Default: the cache of the operator whose work is running (throws on use outside one). */
  cache?: Cache;
  indexes?: Indexes;
  /** The operator memo; default an empty one per request. */
  memo?: Memo;
}

/**
 * How long a handler may run before the framework answers "timed out" itself: a little under the
 * API server's `timeoutSeconds` (a tenth, at most 1 s), so the client gets the handler's id and a
 * reason rather than the API server's bare "context deadline exceeded".
 */
export function answerWithinMs(timeoutSeconds: number): number {
  const limit = timeoutSeconds * 1000;
  return limit - Math.min(1000, limit / 10);
}

function allowed(uid: string, warnings: string[] = []): AdmissionResponse {
  return warnings.length > 0 ? { uid, allowed: true, warnings } : { uid, allowed: true };
}

function refused(
  uid: string,
  code: number,
  message: string,
  warnings: string[],
): AdmissionResponse {
  const response: AdmissionResponse = { uid, allowed: false, status: { code, message } };
  if (warnings.length > 0) response.warnings = warnings;
  return response;
}

/** The object the handler sees: the new one, else (DELETE) the stored one, else (CONNECT without one) its name. */
function bodyOf(request: AdmissionRequest): KubeObject {
  const body = request.object ?? request.oldObject ?? {};
  // The API server may leave the namespace (and, with generateName, the name) to the request.
  const metadata = { ...(body.metadata ?? {}) };
  if (metadata.namespace === undefined && request.namespace !== undefined)
    metadata.namespace = request.namespace;
  if (metadata.name === undefined && request.name !== undefined) metadata.name = request.name;
  return { ...body, metadata };
}

/**
 * Answers one admission request with one handler: skipped (admitted) when the operation, subresource
 * or filters do not match; refused with the handler's `AdmissionError` (its code), or as a 500 with
 * any other error or when the handler runs too long; admitted with the handler's warnings and, for
 * a mutating handler, the JSON patch its merge patch amounts to. Never throws.
 */
export async function dispatchAdmission(
  spec: AdmissionSpec,
  request: AdmissionRequest,
  scope: AdmissionScope,
): Promise<AdmissionResponse> {
  const { options } = spec;
  const operations = options.operations ?? ADMISSION_DEFAULTS.operations;
  if (!operations.includes(request.operation) || options.subresource !== request.subResource)
    return allowed(request.uid);
  const body = bodyOf(request);
  const parts = objectParts(body);
  const logger = scope.logger.child({
    namespace: parts.namespace,
    name: parts.name,
    handler: spec.id,
    operation: request.operation,
  });
  const memo = scope.memo ?? {};
  const warnings: string[] = [];
  try {
    const filters: ObjectFilters = {
      ...options,
      value: options.field !== undefined ? (options.value ?? PRESENT) : undefined,
    };
    if (!matchesObject(body, filters, { resource: scope.resource, memos: new ObjectMemos(memo) }))
      return allowed(request.uid);
    // The handler must not change what the patch is computed against, even by mistake.
    const original = request.object ? structuredClone(request.object) : undefined;
    const patch = emptyPatch();
    const access = currentCacheAccess();
    const attributes = {
      'konductor.handler.id': spec.id,
      'konductor.admission.operation': request.operation,
    };
    const returned = await inSpan(`handler ${spec.id}`, { attributes }, () =>
      withTimeLimit(
        (signal) => {
          const context = {
            ...parts,
            old: request.oldObject,
            operation: request.operation,
            subresource: request.subResource,
            userInfo: request.userInfo,
            dryRun: request.dryRun,
            warnings,
            logger,
            resource: scope.resource,
            client: scope.client,
            cache: scope.cache ?? access.cache,
            indexes: scope.indexes ?? access.indexes,
            memo,
            signal,
            patch,
          };
          return spec.fn(context as MutationContext);
        },
        answerWithinMs(options.timeoutSeconds ?? ADMISSION_DEFAULTS.timeoutSeconds),
      ),
    );
    if (Array.isArray(returned))
      warnings.push(...returned.filter((item): item is string => typeof item === 'string'));
    if (spec.kind === 'mutate') {
      const changes = prune(patch as Patch);
      if (changes && original) {
        const ops = jsonPatchDiff(original, applyMergePatch(original, changes));
        if (ops.length > 0)
          return {
            ...allowed(request.uid, warnings),
            patch: Buffer.from(JSON.stringify(ops)).toString('base64'),
            patchType: 'JSONPatch',
          };
      } else if (changes)
        logger.debug('a patch on a request without a new object (DELETE, CONNECT) is ignored');
    }
    return allowed(request.uid, warnings);
  } catch (error) {
    if (error instanceof AdmissionError) {
      const message = error.message || `refused by ${spec.id}`;
      logger.debug({ code: error.code }, `admission refused: ${message}`);
      return refused(request.uid, error.code, message, warnings);
    }
    const message =
      error instanceof AttemptTimeoutError
        ? `${spec.id} timed out`
        : `${spec.id} failed: ${describeError(error)}`;
    logger.error({ err: error }, `admission handler failed; the request is refused: ${message}`);
    return refused(request.uid, 500, message, warnings);
  }
}
