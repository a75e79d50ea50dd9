import type { KubeObject } from '../objects/kube-object.js';
import type { Identity } from '../state/identity.js';

/** Whether the status write stored bookkeeping the written object lacks (a status schema that prunes unknown fields). */
export function droppedBookkeeping(
  patch: Record<string, unknown>,
  written: KubeObject,
  identity: Identity,
): boolean {
  const sent = (patch.status as Record<string, unknown> | undefined)?.[identity.statusKey];
  if (!storesText(sent)) return false;
  const status = written.status;
  return !(
    status !== null &&
    typeof status === 'object' &&
    Object.hasOwn(status, identity.statusKey)
  );
}

/** Whether a merge patch value stores any text (not only removes). */
function storesText(value: unknown): boolean {
  if (typeof value === 'string') return true;
  return value !== null && typeof value === 'object' && Object.values(value).some(storesText);
}
