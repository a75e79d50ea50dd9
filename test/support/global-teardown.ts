import type { TestControlPlane } from '../../src/testing/index.js';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __konductorControlPlane?: TestControlPlane }).__konductorControlPlane?.stop();
}
