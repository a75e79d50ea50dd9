/** Stops the shared control plane (its reaper cleans up too if this never runs). */
export default async function globalTeardown() {
  await globalThis.__konductorControlPlane?.stop();
}
