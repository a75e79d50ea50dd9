import { ApiError } from '../api/api-error.js';
import type { ApiClient } from '../api/api-client.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import { MANAGED_BY_LABEL } from './webhook-configurations.js';

const ADMISSION_API = 'admissionregistration.k8s.io/v1';
const CRD_API = 'apiextensions.k8s.io/v1';

/**
 * Whether `current` already holds everything `wanted` sets: the API server fills in defaults the
 * operator does not send (`matchConditions`, `service.port`…), so equality would rewrite the
 * configurations on every start and every certificate check.
 */
export function holds(current: unknown, wanted: unknown): boolean {
  if (Array.isArray(wanted)) {
    return (
      Array.isArray(current) &&
      current.length === wanted.length &&
      wanted.every((item, i) => holds(current[i], item))
    );
  }
  if (wanted !== null && typeof wanted === 'object') {
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return false;
    return Object.entries(wanted).every(
      ([key, value]) =>
        value === undefined || holds((current as Record<string, unknown>)[key], value),
    );
  }
  return current === wanted;
}

/**
 * Creates, updates or removes one admission configuration: `wanted` undefined removes the one of
 * that name if this identity made it (an operator that dropped its last validating handler).
 */
async function writeConfiguration(
  client: ApiClient,
  plural: string,
  name: string,
  wanted: KubeObject | undefined,
  logger: Logger,
): Promise<void> {
  const resource = client.resource<KubeObject & { webhooks?: unknown[] }>(ADMISSION_API, plural);
  const current = await resource.find({ name });
  if (!wanted) {
    if (current?.metadata?.labels?.[MANAGED_BY_LABEL] === name) {
      await resource.delete({ name });
      logger.info(
        { configuration: `${plural}/${name}` },
        `removed ${plural}/${name}: no handler of that kind is declared any more`,
      );
    }
    return;
  }
  const body = wanted as KubeObject & { webhooks: unknown[] };
  if (!current) {
    try {
      await resource.create(body);
      logger.info(
        { configuration: `${plural}/${name}` },
        `created ${plural}/${name} with ${body.webhooks.length} webhooks`,
      );
      return;
    } catch (error) {
      // Another replica created it meanwhile: bring it in line below.
      if (!ApiError.isAlreadyExists(error)) throw error;
    }
  }
  const latest = current ?? (await resource.get({ name }));
  if (holds(latest, { metadata: { labels: body.metadata?.labels }, webhooks: body.webhooks }))
    return;
  // A merge patch replaces the `webhooks` list whole, which is what is wanted: it is this operator's.
  await resource.patch({ name }, {
    metadata: { labels: body.metadata?.labels },
    webhooks: body.webhooks,
  } as never);
  logger.info(
    { configuration: `${plural}/${name}` },
    `updated ${plural}/${name} (${body.webhooks.length} webhooks)`,
  );
}

/** Brings the operator's Validating- and MutatingWebhookConfiguration in line with its handlers. */
export async function writeWebhookConfigurations(
  client: ApiClient,
  name: string,
  configurations: { validating: KubeObject | undefined; mutating: KubeObject | undefined },
  logger: Logger,
): Promise<void> {
  await writeConfiguration(
    client,
    'validatingwebhookconfigurations',
    name,
    configurations.validating,
    logger,
  );
  await writeConfiguration(
    client,
    'mutatingwebhookconfigurations',
    name,
    configurations.mutating,
    logger,
  );
}

/**
 * Points a CRD's conversion at the operator's webhook (`spec.conversion`). The CRD is named
 * `<plural>.<group>`; one that is not installed is an error naming it, since objects of its other
 * versions could not be served.
 */
export async function writeConversion(
  client: ApiClient,
  group: string,
  plural: string,
  conversion: Record<string, unknown>,
  logger: Logger,
): Promise<void> {
  const crds = client.resource<KubeObject & { spec?: { conversion?: unknown } }>(
    CRD_API,
    'customresourcedefinitions',
  );
  const name = `${plural}.${group}`;
  const current = await crds.find({ name });
  if (!current)
    throw new Error(
      `CustomResourceDefinition ${name} is not installed: install it before starting an operator that converts its versions (@on.convert)`,
    );
  if (holds(current.spec?.conversion, conversion)) return;
  await crds.patch({ name }, { spec: { conversion } } as never);
  logger.info(
    { crd: name },
    `CustomResourceDefinition ${name} now converts its versions through this operator's webhook`,
  );
}

/** The kinds of admission configuration an operator registers, as their resources are named. */
export const CONFIGURATION_PLURALS = [
  'validatingwebhookconfigurations',
  'mutatingwebhookconfigurations',
] as const;

/**
 * The operator's own admission configurations that exist: named for its identity and labelled as
 * managed by it (someone else's configuration of that name is not its to remove), as `<plural>/<name>`.
 */
export async function ownWebhookConfigurations(client: ApiClient, name: string): Promise<string[]> {
  const found: string[] = [];
  for (const plural of CONFIGURATION_PLURALS) {
    const current = await client.resource<KubeObject>(ADMISSION_API, plural).find({ name });
    if (current?.metadata?.labels?.[MANAGED_BY_LABEL] === name) found.push(`${plural}/${name}`);
  }
  return found;
}

/**
 * Deletes the operator's own admission configurations (see {@link ownWebhookConfigurations}), each
 * only if it is still the one read (its uid as a precondition); resolves with what it deleted. Used
 * when the operator goes for good: a `failurePolicy: Fail` webhook whose server is gone refuses every
 * write it covers, the release of the operator's own finalizers included.
 */
export async function deleteOwnWebhookConfigurations(
  client: ApiClient,
  name: string,
): Promise<string[]> {
  const deleted: string[] = [];
  for (const plural of CONFIGURATION_PLURALS) {
    const configurations = client.resource<KubeObject>(ADMISSION_API, plural);
    const current = await configurations.find({ name });
    if (current?.metadata?.labels?.[MANAGED_BY_LABEL] !== name) continue;
    const uid = current.metadata?.uid;
    if (await configurations.delete({ name }, uid ? { preconditions: { uid } } : {}))
      deleted.push(`${plural}/${name}`);
  }
  return deleted;
}
