/**
 * Tutorial step 3: each new EphemeralVolumeClaim gets a PersistentVolumeClaim of its size.
 */
import { defineKind, kinds, on, PermanentError, type ChangeContext, type CustomObject } from 'konductor';

export type EphemeralVolumeClaim = CustomObject<{ size?: string }>;
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
  }
}
