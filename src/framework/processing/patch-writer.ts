import { ApiError } from '../api/api-error.js';
import type { ObjectApi } from '../api/object-api.js';
import type { KubeObject } from '../objects/kube-object.js';
import { prune } from '../intents/patch.js';

/** Times a write is sent again on the newest version after a conflict, before the 409 goes to the caller. */
export const MAX_REBASES = 5;

/** How {@link writePatch} sends a patch. */
export interface WritePatchOptions {
  /** Sees each written object. */
  onWrite?: (written: KubeObject) => void;
  /** Which part carries the bookkeeping and goes last: the object (annotation storage) or its status. */
  last?: 'object' | 'status';
  /**
   * Aborted once this replica stopped handling the object (it lost its Lease, or handed the object
   * on): a write of it that meets a newer version is then refused for good ({@link WriteSuperseded}).
   */
  signal?: AbortSignal;
}

/**
 * A write refused because the object changed after this replica stopped handling it: the replica
 * that handles it now may have written since, and this run's patch, decided on an older version,
 * must not land over theirs.
 */
export class WriteSuperseded extends Error {
  override readonly name = 'WriteSuperseded';

  constructor(readonly object: string) {
    super(
      `the write for ${object} was not made: the object changed after this replica stopped handling it; ` +
        'the replica that handles it now handles that change (nothing to do)',
    );
  }
}

/**
 * Sends a merged handler patch, decided on `body`, as at most two merge PATCHes. When the resource
 * has a status subresource, `status` goes there. The part carrying the bookkeeping (`last`) goes
 * last: if the first write succeeds and the second fails, the handler runs again rather than its
 * changes being lost. Empty parts are not sent.
 *
 * Each write lands only on the version it follows (`body`'s, then the first write's): a write held
 * up in the network (a partition heals, TCP delivers it) can never land over a newer write of the
 * replica that took the object over. A conflict while this replica still handles the object (a user
 * or another controller wrote meanwhile) sends the same patch again on the newest version, as a
 * merge patch without a precondition would have landed; once `signal` is aborted it is
 * {@link WriteSuperseded}.
 */
export async function writePatch(
  api: ObjectApi,
  body: KubeObject,
  patch: Record<string, unknown>,
  options: WritePatchOptions = {},
): Promise<void> {
  const { onWrite = () => undefined, last = 'object', signal } = options;
  const { namespace, name = '' } = body.metadata ?? {};
  let version = body.metadata?.resourceVersion;
  const send = async (part: Record<string, unknown>, subresource?: string): Promise<void> => {
    for (let rebases = 0; ; rebases++) {
      try {
        const written = await api.mergePatch(namespace, name, part, subresource, version);
        version = written.metadata?.resourceVersion;
        onWrite(written);
        return;
      } catch (error) {
        if (version === undefined || !ApiError.isConflict(error)) throw error;
        if (signal?.aborted) throw new WriteSuperseded(namespace ? `${namespace}/${name}` : name);
        if (rebases >= MAX_REBASES) throw error;
        version = (await api.get(namespace, name)).metadata?.resourceVersion;
      }
    }
  };
  const rest: Record<string, unknown> = { ...patch };
  let status: Record<string, unknown> | undefined;
  if (api.resource.hasStatus) {
    status = prune((rest.status as Record<string, unknown> | undefined) ?? {});
    delete rest.status;
  }
  const main = prune(rest);
  if (status && last === 'object') await send({ status }, 'status');
  if (main) await send(main);
  if (status && last === 'status') await send({ status }, 'status');
}
