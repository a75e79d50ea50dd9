import type { ObjectApi } from '../api/object-api.js';
import type { KubeObject } from '../objects/kube-object.js';
import { prune } from '../intents/patch.js';

/**
 * Sends a merged handler patch as at most two merge PATCHes. When the resource has a status
 * subresource, `status` goes there. The part carrying the bookkeeping (`last`: the object with
 * annotation storage, the status with status storage) goes last: if the first write succeeds and the
 * second fails, the handler runs again rather than its changes being lost. Empty parts are not sent.
 * `onWrite` sees each written object.
 */
export async function writePatch(
  api: ObjectApi,
  namespace: string | undefined,
  name: string,
  patch: Record<string, unknown>,
  onWrite: (written: KubeObject) => void = () => undefined,
  last: 'object' | 'status' = 'object',
): Promise<void> {
  const rest: Record<string, unknown> = { ...patch };
  let status: Record<string, unknown> | undefined;
  if (api.resource.hasStatus) {
    status = prune((rest.status as Record<string, unknown> | undefined) ?? {});
    delete rest.status;
  }
  const main = prune(rest);
  if (status && last === 'object')
    onWrite(await api.mergePatch(namespace, name, { status }, 'status'));
  if (main) onWrite(await api.mergePatch(namespace, name, main));
  if (status && last === 'status')
    onWrite(await api.mergePatch(namespace, name, { status }, 'status'));
}
