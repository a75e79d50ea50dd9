// `npm start`: brings up the embedded test control plane and keeps it running until Ctrl-C.
// Later stages run the bundled operators against it (or against the current kubeconfig).
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { TestControlPlane, installCrds, readCrds } from '../testing/index.js';

const crdDir = join(import.meta.dirname, '..', '..', 'crds');

async function main(): Promise<void> {
  console.log('konductor: starting the embedded control plane (etcd + kube-apiserver)...');
  const plane = await TestControlPlane.start();
  const hasCrds = existsSync(crdDir) && readdirSync(crdDir).some((f) => /\.ya?ml$/.test(f));
  if (hasCrds) await installCrds(plane.kubeConfig(), readCrds(crdDir));
  console.log(`konductor: control plane ready at ${plane.server}`);
  console.log(`konductor: point kubectl at it with:  export KUBECONFIG=${plane.kubeconfigPath}`);
  console.log('konductor: press Ctrl-C to stop (processes and temporary files are removed).');
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    console.log('konductor: stopping...');
    void plane.stop().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(`konductor: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
