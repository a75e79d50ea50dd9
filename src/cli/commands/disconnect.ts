// `konductor disconnect <files>`: releases every object of the declared resources from the operator
// (its finalizer, annotations and status record), so the operator can go and what it manages stays;
// its admission configurations go first, as nothing would answer their webhooks.
// Its flags and help: ../options/release.ts.
import type { ApiClient } from '../../framework/api/api-client.js';
import { ApiError } from '../../framework/api/api-error.js';
import {
  deleteOwnWebhookConfigurations,
  ownWebhookConfigurations,
} from '../../framework/admission/configuration-writer.js';
import { ObjectApi } from '../../framework/api/object-api.js';
import type { Resource } from '../../framework/api/resource.js';
import type { KubeObject } from '../../framework/objects/kube-object.js';
import { Identity } from '../../framework/state/identity.js';
import { describeRelease, releasePatch } from '../../framework/state/release-patch.js';
import type { DisconnectOptions } from '../options/release.js';
import {
  CommandError,
  connect,
  declaredResources,
  describeLease,
  eachLimited,
  listInScope,
  liveLeases,
  objectName,
  oneLine,
  resourceName,
} from './declared-objects.js';

/** Objects released at once. */
const PARALLEL = 16;
/** Reads and writes one object may take when others change it at the same time. */
const ATTEMPTS = 5;

/** What happened to one object. */
type Outcome =
  { kind: 'released' | 'clean' | 'gone'; what?: string } | { kind: 'failed'; why: string };

/** `konductor disconnect`: prints one line per object it releases (or would), then the counts. */
export async function disconnect(
  options: DisconnectOptions,
  out: NodeJS.WritableStream = process.stdout,
): Promise<void> {
  const identity = Identity.parse(options.identity);
  const client = await connect(options);
  try {
    const leases = await liveLeases(client, options, Date.now());
    if (leases.length > 0) {
      const who = leases.map(describeLease).join('; ');
      if (options.dryRun)
        out.write(
          `note: a leader holds the operator's Lease: ${who}; disconnect would refuse without --force\n`,
        );
      else if (!options.force) {
        throw new CommandError(
          `refusing to disconnect while the operator leads: ${who}. A running operator would handle every released object as new; ` +
            'stop it first (scale its Deployment to 0), or pass --force',
        );
      } else out.write(`warning: --force: disconnecting while ${who} leads\n`);
    }
    const { served, unserved } = await declaredResources(client, options.files);
    for (const line of unserved) out.write(`skipped ${line}\n`);
    await withdrawWebhooks(client, identity, options.dryRun, out);
    const counts = { seen: 0, released: 0, clean: 0, failed: 0 };
    for (const { resource } of served) {
      const objects = await listInScope(client, resource, options.namespaces);
      counts.seen += objects.length;
      const api = new ObjectApi(client, resource);
      await eachLimited(objects, PARALLEL, async (object) => {
        const outcome = options.dryRun
          ? planned(object, resource, identity)
          : await release(api, object, identity);
        const name = `${resourceName(resource)} ${objectName(object)}`;
        if (outcome.kind === 'failed') {
          counts.failed++;
          out.write(`failed ${name}: ${outcome.why}\n`);
        } else if (outcome.kind === 'clean') {
          counts.clean++;
        } else {
          counts.released++;
          const verb = options.dryRun
            ? 'would release'
            : outcome.kind === 'gone'
              ? 'gone (deleted meanwhile)'
              : 'released';
          out.write(`${verb} ${name}${outcome.what ? `: ${outcome.what}` : ''}\n`);
        }
      });
    }
    const released = options.dryRun ? 'to release' : 'released';
    out.write(
      `disconnect${options.dryRun ? ' (dry run, nothing written)' : ''}: ${counts.seen} objects seen, ${counts.released} ${released}, ${counts.clean} already clean, ${counts.failed} failed\n`,
    );
    if (counts.failed > 0) process.exitCode = 1;
  } finally {
    client.close();
  }
}

/**
 * Removes the operator's own admission configurations before any release: with no server behind
 * them, `failurePolicy: Fail` webhooks refuse the release patches and, left behind, every later write
 * of the resources they cover. The operator registers them again when it next starts.
 */
async function withdrawWebhooks(
  client: ApiClient,
  identity: Identity,
  dryRun: boolean,
  out: NodeJS.WritableStream,
): Promise<void> {
  const why = 'its webhooks would refuse every write once the operator is gone';
  if (dryRun) {
    for (const name of await ownWebhookConfigurations(client, identity.name))
      out.write(`would delete ${name} first: ${why}\n`);
    return;
  }
  let deleted: string[];
  try {
    deleted = await deleteOwnWebhookConfigurations(client, identity.name);
  } catch (error) {
    throw new CommandError(
      `cannot delete the operator's webhook configurations ${identity.name} (${oneLine(error)}); nothing was released: ` +
        `delete them (kubectl delete validatingwebhookconfiguration,mutatingwebhookconfiguration ${identity.name} --ignore-not-found) or use a kubeconfig allowed to, and run disconnect again`,
    );
  }
  for (const name of deleted) out.write(`deleted ${name}: ${why}\n`);
}

/** What a dry run says about one object. */
function planned(object: KubeObject, resource: Resource, identity: Identity): Outcome {
  const patch = releasePatch(object, identity, { hasStatusSubresource: resource.hasStatus });
  return patch ? { kind: 'released', what: describeRelease(patch, identity) } : { kind: 'clean' };
}

/**
 * Releases one object: the status record first, then annotations and the finalizer in one JSON patch
 * (its `remove` and `test` operations fail if someone changed them meanwhile: the object is read again
 * and the patch rebuilt). An object that is gone needs nothing.
 */
async function release(api: ObjectApi, listed: KubeObject, identity: Identity): Promise<Outcome> {
  const namespace = listed.metadata?.namespace;
  const name = listed.metadata?.name ?? '';
  let object = listed;
  let what: string | undefined;
  for (let attempt = 1; ; attempt++) {
    const patch = releasePatch(object, identity, { hasStatusSubresource: api.resource.hasStatus });
    if (!patch) return what === undefined ? { kind: 'clean' } : { kind: 'released', what };
    what ??= describeRelease(patch, identity);
    try {
      if (patch.statusPatch) await api.mergePatch(namespace, name, patch.statusPatch, 'status');
      if (patch.objectOps.length > 0) await api.jsonPatch(namespace, name, patch.objectOps);
      return { kind: 'released', what };
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return { kind: 'gone', what };
      const conflict = error instanceof ApiError && (error.status === 409 || error.status === 422);
      if (!conflict || attempt >= ATTEMPTS) return { kind: 'failed', why: oneLine(error) };
    }
    try {
      object = await api.get(namespace, name);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return { kind: 'gone', what };
      return { kind: 'failed', why: oneLine(error) };
    }
  }
}
