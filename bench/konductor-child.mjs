// Operator side of the catch-up and steady-load benchmarks on Konductor, in its own process so its RSS
// is its own. A create handler copies spec.idx to status.seen and records in status.startedAt when it
// started (ms since the epoch). The framework writes status (its subresource) and then the object
// (its diff-base annotation); once `expected` objects have had both writes acknowledged, it prints
// the result and exits. With spec.sentAt on the objects (steady load) it also reports, per object,
// the milliseconds from sentAt to the acknowledgement of the status write. With BENCH_STORAGE=status
// the bookkeeping rides in the status PATCH, so that one write is each object's last. With BENCH_OTLP_URL
// it traces every run (100 % sampling) to that receiver.
import {
  benchResource,
  benchTracing,
  finishRun,
  loadFramework,
  runMeters,
  startBenchOperator,
} from './child-common.mjs';

const [kubeconfigPath, namespace, expectedText, concurrencyText] = process.argv.slice(2);
const expected = Number(expectedText);
const storage = process.env.BENCH_STORAGE === 'status' ? 'status' : 'annotations';
const framework = await loadFramework();
const meters = runMeters();
const tracing = await benchTracing(framework);

const sentAt = new Map(); // name -> spec.sentAt, until its status write is acknowledged
const writtenMs = [];
const finished = new Set();
const registry = new framework.Registry().change(
  'create',
  { apiVersion: benchResource.apiVersion, name: benchResource.plural },
  async ({ name, spec, patch }) => {
    const now = Date.now();
    if (typeof spec.sentAt === 'number') sentAt.set(name, spec.sentAt);
    patch.status.seen = spec.idx;
    patch.status.startedAt = now;
  },
  { id: 'bench' },
);
const operator = await startBenchOperator(framework, {
  kubeconfigPath,
  namespace,
  concurrency: Number(concurrencyText),
  registry,
  storage,
  tracing,
  onPatch: (target) => {
    if (target.status) {
      const sent = sentAt.get(target.name);
      if (sent !== undefined) {
        writtenMs.push(Date.now() - sent);
        sentAt.delete(target.name);
      }
    }
    // The object PATCH (diff-base) is each object's last write with annotation storage; the status PATCH with status storage.
    if (target.status === (storage === 'status') && !finished.has(target.name)) {
      finished.add(target.name);
      if (finished.size === expected) finish();
    }
  },
});
void operator.ready.then(() => meters.ready());

function finish() {
  void finishRun({
    result: { ...meters.result(expected), storage, writtenMs },
    stop: async () => {
      await operator.stop(2_000);
      await tracing?.shutdown(5_000);
    },
  });
}
