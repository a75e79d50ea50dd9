/**
 * Tutorial step 5: the claim's labels reach the PVC too, removals included.
 */
import { defineKind, kinds, on, PermanentError, type ChangeContext, type CustomObject, type FieldChangeContext } from 'konductor';

interface EvcStatus {
  /** What createFn returned: the framework stores it under the handler's name. */
  createFn?: { 'pvc-name': string };
}

export type EphemeralVolumeClaim = CustomObject<{ size?: string }, EvcStatus>;
export const EphemeralVolumeClaim = defineKind<EphemeralVolumeClaim>('kopf.dev/v1', 'EphemeralVolumeClaim', 'ephemeralvolumeclaims');

export class EphemeralVolumeClaims {
  @on.create(EphemeralVolumeClaim)
  async createFn({ spec, name, namespace, logger, client }: ChangeContext<EphemeralVolumeClaim>) {
    const size = spec.size;
    if (!size) {
      throw new PermanentError(`Size must be set. Got ${JSON.stringify(size)}.`);
    }

    const pvc: kinds.PersistentVolumeClaim = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace },
      spec: { storageClassName: 'standard', accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } } },
    };

    const obj = await client.resource(kinds.PersistentVolumeClaim).create(pvc);

    logger.info({ pvc: obj.metadata?.name }, 'PVC child is created');

    return { 'pvc-name': obj.metadata!.name! };
  }

  @on.update(EphemeralVolumeClaim)
  async updateFn({ spec, status, namespace, logger, client }: ChangeContext<EphemeralVolumeClaim>) {
    const size = spec.size;
    if (!size) {
      throw new PermanentError(`Size must be set. Got ${JSON.stringify(size)}.`);
    }

    const pvcName = status?.createFn?.['pvc-name'];
    if (!pvcName) {
      throw new PermanentError('The PVC is not known: status.createFn is empty.');
    }
    const pvcPatch = { spec: { resources: { requests: { storage: size } } } };

    const obj = await client.resource(kinds.PersistentVolumeClaim).patch({ namespace, name: pvcName }, pvcPatch);

    logger.info({ pvc: obj.metadata?.name }, 'PVC child is updated');
  }

  @on.field(EphemeralVolumeClaim, 'metadata.labels')
  async relabel({ old, new: labels, status, namespace, client }: FieldChangeContext<EphemeralVolumeClaim, 'metadata.labels'>) {
    const pvcName = status?.createFn?.['pvc-name'];
    if (!pvcName) {
      throw new PermanentError('The PVC is not known: status.createFn is empty.');
    }
    // A merge patch keeps the labels it does not name: a removed label is sent as null.
    const removed = Object.fromEntries(Object.keys(old ?? {}).map((key) => [key, null]));
    const pvcPatch = { metadata: { labels: { ...removed, ...labels } } };

    await client.resource(kinds.PersistentVolumeClaim).patch({ namespace, name: pvcName }, pvcPatch);
  }
}
