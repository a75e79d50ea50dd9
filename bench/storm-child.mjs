// Operator side of the update-storm benchmark on Konductor. Create and update handlers copy spec.value
// to status.value; update-handler runs are counted per object (also written to status.runs). Prints
// `{"ready":true}` once every object's creation has been handled, and the result once every object's
// status write for `finalValue` has been acknowledged and `settleMs` more have passed without a run
// (so late runs are counted too).
import {
  benchResource,
  finishRun,
  loadFramework,
  sampleRss,
  send,
  startBenchOperator,
} from './child-common.mjs';

const [kubeconfigPath, namespace, objectsText, finalValueText, concurrencyText, settleText] =
  process.argv.slice(2);
const settleMs = Number(settleText);
const objects = Number(objectsText);
const finalValue = Number(finalValueText);
const framework = await loadFramework();
const rss = sampleRss();

const runs = new Map(); // name -> update-handler runs
const writing = new Map(); // name -> spec.value of the run whose status write is in flight
const created = new Set();
const handledAt = new Map(); // name -> when the status write for finalValue was acknowledged
let lastRunAt = 0;
const resource = { apiVersion: benchResource.apiVersion, name: benchResource.plural };
const registry = new framework.Registry()
  .change(
    'create',
    resource,
    async ({ name, spec, patch }) => {
      writing.set(name, spec.value);
      patch.status.value = spec.value;
    },
    { id: 'storm-create' },
  )
  .change(
    'update',
    resource,
    async ({ name, spec, patch }) => {
      lastRunAt = Date.now();
      const count = (runs.get(name) ?? 0) + 1;
      runs.set(name, count);
      writing.set(name, spec.value);
      patch.status.value = spec.value;
      patch.status.runs = count;
    },
    { id: 'storm-update', field: 'spec.value' },
  );
const operator = await startBenchOperator(framework, {
  kubeconfigPath,
  namespace,
  concurrency: Number(concurrencyText),
  registry,
  onPatch: (target) => {
    if (!target.status) {
      // The object PATCH (diff-base) ends a run; the first one ends the create run.
      if (!created.has(target.name)) {
        created.add(target.name);
        if (created.size === objects) send({ ready: true });
      }
      return;
    }
    if (writing.get(target.name) === finalValue && !handledAt.has(target.name)) {
      handledAt.set(target.name, Date.now());
      if (handledAt.size === objects) void settle();
    }
  },
});

async function settle() {
  const lastHandledAt = Math.max(...handledAt.values());
  while (Date.now() - lastRunAt < settleMs)
    await new Promise((resolve) => setTimeout(resolve, 200));
  await finishRun({
    result: { lastHandledAt, runs: Object.fromEntries(runs), ...rss.stop() },
    stop: () => operator.stop(2_000),
  });
}
