// Operator side of the takeover benchmark (bench/takeover.ts): one replica under leader election
// (5 s Lease, 3 s renew deadline, 0.5 s retry), with a warm standby when its fourth argument is
// `warm`. Its create handler does nothing (each object gets its diff-base write); its update handler
// reports each handled change at once (`{"handled":<name>,"at":<ms>}`). It also reports when its
// handlers' watch opened after its listing (`watching`), when it starts leading (`leading`), and,
// once `expected` objects have had their diff-base written by it, `caughtUp`.
import { benchResource, loadFramework, objectOfPath, send, startReplica } from './child-common.mjs';

const [kubeconfigPath, namespace, replica, mode, expectedText] = process.argv.slice(2);
const expected = Number(expectedText);
const framework = await loadFramework();
const resource = { apiVersion: benchResource.apiVersion, name: benchResource.plural };
const registry = new framework.Registry()
  .change('create', resource, () => undefined, { id: 'created' })
  .change(
    'update',
    resource,
    ({ name }) => {
      send({ handled: name, at: Date.now() });
    },
    { id: 'changed' },
  );
const patched = new Set();
let watching = false;
const operator = await startReplica(framework, {
  kubeconfigPath,
  namespace,
  lease: 'takeover',
  replica,
  registry,
  election: { warmStandby: mode === 'warm' },
  onRequest: (method, path, status) => {
    // A watch is reported as WATCH once its stream opened: the listing before it is done.
    if (!watching && method === 'WATCH' && path.includes(`/${benchResource.plural}`)) {
      watching = true;
      send({ watching: Date.now() });
    }
    if (method !== 'PATCH' || status >= 300 || patched.size >= expected) return;
    const target = objectOfPath(path);
    if (!target || target.status) return;
    patched.add(target.name);
    if (patched.size === expected) send({ caughtUp: Date.now() });
  },
});
const leading = setInterval(() => {
  if (!operator.active) return;
  send({ leading: Date.now() });
  clearInterval(leading);
}, 2);
process.once('SIGTERM', () => void operator.stop(5_000).then(() => process.exit(0)));
