/**
 * Tutorial step 7: the whole operator as one reconcile. The PVC follows the claim's size and labels,
 * comes back when someone deletes it, and its phase shows in the claim's status.
 */
import { adopt, defineKind, kinds, on, type CustomObject, type ReconcileContext } from 'konductor';

export type EphemeralVolumeClaim = CustomObject<{ size?: string }, { phase?: string }>;
export const EphemeralVolumeClaim = defineKind<EphemeralVolumeClaim>('kopf.dev/v1', 'EphemeralVolumeClaim', 'ephemeralvolumeclaims');

export class EphemeralVolumeClaims {
  @on.reconcile(EphemeralVolumeClaim, { owns: [kinds.PersistentVolumeClaim] })
  async reconcile({ name, namespace, spec, labels, body, client, patch, conditions }: ReconcileContext<EphemeralVolumeClaim>) {
    const pvc = await client.resource(kinds.PersistentVolumeClaim).apply(
      adopt(
        {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { name, namespace, labels },
          spec: { storageClassName: 'standard', accessModes: ['ReadWriteOnce'], resources: { requests: { storage: spec.size ?? '1G' } } },
        },
        body,
      ),
      { force: true },
    );
    patch.status.phase = pvc.status?.phase ?? 'Pending';
    conditions.set('Bound', pvc.status?.phase === 'Bound');
  }
}
