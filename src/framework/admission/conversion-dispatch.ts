import { inSpan } from '../observability/tracing.js';
import { splitApiVersion } from '../api/resource.js';
import { AttemptTimeoutError, withTimeLimit } from '../clock/time-limit.js';
import type { ConversionSpec } from '../intents/admission-specs.js';
import { describeError } from '../intents/errors.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import type { ConversionRequest, ConversionResponse } from './conversion-review.js';
import { isPlainObject } from '../objects/plain-object.js';

/** The API server waits 30 s for a conversion webhook; the framework answers before. */
export const CONVERSION_ANSWER_WITHIN_MS = 25_000;

function objectName(object: KubeObject): string {
  const { namespace, name } = object.metadata ?? {};
  return `${object.kind ?? 'object'} ${namespace ? `${namespace}/` : ''}${name ?? '(unnamed)'}`;
}

function failure(uid: string, message: string): ConversionResponse {
  return { uid, convertedObjects: [], result: { status: 'Failure', message } };
}

/**
 * Converts every object of a request with the CRD's handler, in order. Objects already at the desired
 * version pass through untouched; the handler gets a copy of each other one and the framework sets
 * the result's `apiVersion`. The first failure (an error, a non-object result, the wrong group, the
 * time limit) fails the whole request with a message naming the object, as the API server wants
 * all or nothing. Never throws.
 */
export async function dispatchConversion(
  spec: ConversionSpec,
  request: ConversionRequest,
  logger: Logger,
  answerWithinMs: number = CONVERSION_ANSWER_WITHIN_MS,
): Promise<ConversionResponse> {
  const { uid, desiredAPIVersion: toVersion } = request;
  if (splitApiVersion(toVersion).group !== spec.group)
    return failure(
      uid,
      `cannot convert to ${toVersion}: this webhook converts ${spec.name}.${spec.group}`,
    );
  const converted: KubeObject[] = [];
  const run = async (): Promise<string | undefined> => {
    for (const object of request.objects) {
      const fromVersion = object.apiVersion ?? '';
      if (fromVersion === toVersion) {
        converted.push(object);
        continue;
      }
      if (splitApiVersion(fromVersion).group !== spec.group)
        return `${objectName(object)} is ${fromVersion}, not of ${spec.group}`;
      const objectLogger = logger.child({
        namespace: object.metadata?.namespace,
        name: object.metadata?.name,
        handler: spec.id,
      });
      let result: unknown;
      try {
        result = await spec.fn({
          object: structuredClone(object),
          fromVersion,
          toVersion,
          logger: objectLogger,
        });
      } catch (error) {
        objectLogger.error({ err: error }, `conversion from ${fromVersion} to ${toVersion} failed`);
        return `converting ${objectName(object)} from ${fromVersion} to ${toVersion} failed: ${describeError(error)}`;
      }
      if (!isPlainObject(result))
        return `converting ${objectName(object)} from ${fromVersion} to ${toVersion}: ${spec.id} returned no object`;
      converted.push({ ...result, apiVersion: toVersion });
    }
    return undefined;
  };
  try {
    const attributes = {
      'konductor.handler.id': spec.id,
      'konductor.conversion.to': toVersion,
      'konductor.conversion.objects': request.objects.length,
    };
    const problem = await inSpan(`handler ${spec.id}`, { attributes }, () =>
      withTimeLimit(run, answerWithinMs),
    );
    return problem === undefined
      ? { uid, convertedObjects: converted, result: { status: 'Success' } }
      : failure(uid, problem);
  } catch (error) {
    return failure(
      uid,
      error instanceof AttemptTimeoutError
        ? `${spec.id} timed out converting to ${toVersion}`
        : `${spec.id} failed: ${describeError(error)}`,
    );
  }
}
