import { ApiError, events, type KubeObject, type ResourceClient } from 'konductor';

type DeleteOptions = NonNullable<Parameters<ResourceClient<KubeObject>['delete']>[1]>;

/** The fields of a controller owner reference a child check needs. */
export interface ControllerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}

/**
 * `object`'s controller owner reference (`controller: true`; the API server allows one), or
 * undefined. Read defensively: references are written by whoever may write the object.
 */
export function controllerReference(object: KubeObject): ControllerReference | undefined {
  const references = object.metadata?.ownerReferences;
  if (!Array.isArray(references)) return undefined;
  for (const reference of references as unknown[]) {
    if (reference === null || typeof reference !== 'object') continue;
    const { controller, apiVersion, kind, name, uid } = reference as Record<string, unknown>;
    if (controller !== true || typeof uid !== 'string' || uid === '') continue;
    return {
      apiVersion: typeof apiVersion === 'string' ? apiVersion : '',
      kind: typeof kind === 'string' ? kind : '',
      name: typeof name === 'string' ? name : '',
      uid,
    };
  }
  return undefined;
}

/**
 * Whether `child` is the owner's own: its controller owner reference carries `ownerUid`. An object
 * that merely has the child's name (or its labels) in a shared namespace is someone else's and is
 * never patched or deleted on the owner's behalf.
 */
export function isControlledBy(child: KubeObject, ownerUid: string | undefined): boolean {
  return ownerUid !== undefined && controllerReference(child)?.uid === ownerUid;
}

/** `Kind namespace/name` of an object, as Events and errors name it (listed items carry no kind: pass it). */
export function describeObject(object: KubeObject, kind = object.kind ?? 'object'): string {
  const meta = object.metadata ?? {};
  return `${kind} ${meta.namespace ? `${meta.namespace}/` : ''}${meta.name ?? ''}`;
}

/** The owner a controller reference names, as an object an Event can be about (owners are in their child's namespace). */
export function referencedOwner(reference: ControllerReference, namespace: string): KubeObject {
  return {
    apiVersion: reference.apiVersion,
    kind: reference.kind,
    metadata: { name: reference.name, namespace, uid: reference.uid },
  };
}

/**
 * One Warning Event on `owner` that `what` (`Kind namespace/name`) carries the name or labels of one
 * of its children but is someone else's, and is left untouched. Repeats fold into the Event's count.
 */
export function warnForeignChild(owner: KubeObject, what: string): void {
  events.warn(
    owner,
    'ForeignChild',
    `${what} exists but is not controlled by ${describeObject(owner)} (no controller owner reference with its uid): it is left untouched. Rename or delete it so the operator can make its own`,
  );
}

/**
 * Deletes `child` (of `kind`, read or listed just before) when it is `owner`'s own, and only that
 * incarnation (a precondition on its uid: one replaced meanwhile is no longer the owner's). Someone
 * else's object is left in place with {@link warnForeignChild}. True when it was deleted.
 */
export async function deleteIfOwn(
  resource: ResourceClient<KubeObject>,
  child: KubeObject,
  kind: string,
  owner: KubeObject,
  options: DeleteOptions = {},
): Promise<boolean> {
  const meta = child.metadata ?? {};
  if (!isControlledBy(child, owner.metadata?.uid)) {
    warnForeignChild(owner, describeObject(child, kind));
    return false;
  }
  try {
    return await resource.delete(
      { namespace: meta.namespace, name: meta.name ?? '' },
      { ...options, preconditions: { uid: meta.uid } },
    );
  } catch (error) {
    if (ApiError.isConflict(error)) return false;
    throw error;
  }
}
