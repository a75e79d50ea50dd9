import { TestControlPlane } from '../../src/testing/index.js';

/** Starts the one control plane all integration test files share; its kubeconfig reaches workers through the environment. */
export default async function globalSetup(): Promise<void> {
  const plane = await TestControlPlane.start();
  process.env.KONDUCTOR_TEST_KUBECONFIG = plane.kubeconfigPath;
  (globalThis as { __konductorControlPlane?: TestControlPlane }).__konductorControlPlane = plane;
}
