// One replica of a sharded operator for the shards benchmark (bench/shards.ts), in its own process
// with the Deployment's Node options: `--sharding` with a 10 s Lease (8 s renew deadline, 1 s retry).
// Its create handler does nothing (each object gets its diff-base write, by whichever replica has
// it); its update handler of `spec.value` reports the objects it saw changed, `{"touched":[names]}`,
// every 50 ms. It reports `{"joined":<ms>}` once it holds its member Lease, then, whenever they
// change, `{"shard":{objects, ring, created}}`: the objects its watches hold (`shard_objects`), the
// live members it sees, and how many creations it handled. On SIGUSR2 it reports `{"memory":{...}}`:
// heap in use after two full collections (the live set), heap in use and peak RSS; with
// BENCH_SHARDS_SNAPSHOTS=<dir>, it first writes a heap snapshot there (<namespace>-<replica>-<pid>).
import { setFlagsFromString, writeHeapSnapshot } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { benchResource, loadFramework, send, startReplica } from './child-common.mjs';

const [kubeconfigPath, namespace, replica] = process.argv.slice(2);
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc');
const mb = (bytes) => Math.round((bytes / 2 ** 20) * 100) / 100;

let peakRss = 0;
let peakHeapUsed = 0;
setInterval(() => {
  const now = process.memoryUsage();
  peakRss = Math.max(peakRss, now.rss);
  peakHeapUsed = Math.max(peakHeapUsed, now.heapUsed);
}, 20).unref();

const framework = await loadFramework();
const gauges = { shard_objects: 0, shard_ring_members: 0 };
const metrics = {
  increment() {},
  observe() {},
  set(name, value) {
    if (name in gauges) gauges[name] = value;
  },
};
let created = 0;
let touched = [];
const resource = { apiVersion: benchResource.apiVersion, name: benchResource.plural };
const registry = new framework.Registry()
  .change('create', resource, () => void created++, { id: 'created' })
  .change('update', resource, ({ name }) => void touched.push(name), {
    id: 'touched',
    field: 'spec.value',
  });
const operator = await startReplica(framework, {
  kubeconfigPath,
  namespace,
  lease: 'shards',
  replica,
  registry,
  metrics,
  sharding: true,
  // Longer than the takeover bench's: a catch-up of 30,000 objects loads the API server for minutes.
  election: { leaseDuration: 10, renewDeadline: 8, retryPeriod: 1 },
});
// As `konductor run` exits to restart: a replica that lost its Lease does no more work.
void operator.lostLeadership.then(() => {
  send({ lost: Date.now() });
  process.exit(3);
});

let joined = false;
let last = '';
setInterval(() => {
  if (!joined && operator.active) {
    joined = true;
    send({ joined: Date.now() });
  }
  if (touched.length > 0) {
    send({ touched, at: Date.now() });
    touched = [];
  }
  const shard = { objects: gauges.shard_objects, ring: gauges.shard_ring_members, created };
  const key = JSON.stringify(shard);
  if (key === last) return;
  last = key;
  send({ shard: { ...shard, at: Date.now() } });
}, 50);

process.on('SIGUSR2', () => {
  collect();
  collect();
  if (process.env.BENCH_SHARDS_SNAPSHOTS)
    writeHeapSnapshot(
      `${process.env.BENCH_SHARDS_SNAPSHOTS}/${namespace}-${replica}-${process.pid}.heapsnapshot`,
    );
  send({
    memory: {
      liveHeapMb: mb(process.memoryUsage().heapUsed),
      peakHeapUsedMb: mb(peakHeapUsed),
      peakRssMb: mb(Math.max(peakRss, process.resourceUsage().maxRSS * 1024)),
      at: Date.now(),
    },
  });
});
process.once('SIGTERM', () => void operator.stop(5_000).then(() => process.exit(0)));
