// Starts a control plane, prints where it lives, and waits to be killed: the lifecycle test
// SIGKILLs this process to prove the reaper cleans up after an interrupted test run.
import { TestControlPlane } from '../../src/testing/index.js';

const plane = await TestControlPlane.start();
process.stdout.write(
  `${JSON.stringify({ dir: plane.dir, pids: [plane.etcd.pid, plane.apiServer.pid] })}\n`,
);
setInterval(() => undefined, 60_000);
