/**
 * Tutorial step 4: the PVC's name is kept in the claim's status, and a new size reaches the PVC.
 */
import { defineKind, kinds, on, PermanentError, type ChangeContext, type CustomObject } from 'konductor';

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
}
