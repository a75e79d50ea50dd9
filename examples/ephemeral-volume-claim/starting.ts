/**
 * Tutorial step 2: an operator that only says what it sees.
 */
import { defineKind, on, type ChangeContext, type CustomObject } from 'konductor';

export type EphemeralVolumeClaim = CustomObject<{ size?: string }>;
export const EphemeralVolumeClaim = defineKind<EphemeralVolumeClaim>('kopf.dev/v1', 'EphemeralVolumeClaim', 'ephemeralvolumeclaims');

export class EphemeralVolumeClaims {
  @on.create(EphemeralVolumeClaim)
  async createFn({ body, logger }: ChangeContext<EphemeralVolumeClaim>) {
    logger.info({ body }, 'A handler is called with body');
  }
}
