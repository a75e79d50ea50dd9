// The naive baseline: what a TypeScript user would write without a framework, directly on
// @kubernetes/client-node: `makeInformer` (list, then watch, objects cached in memory) and, for every
// object added or updated whose status does not show it handled yet, one merge PATCH of its status
// (status.seen = spec.idx, status.startedAt = when the handler started). The only addition to the
// textbook informer is a limit on concurrent handlers (the same as the framework's, 64 by default):
// without one, a listing of 10,000 objects fires 10,000 PATCHes at once. No retries beyond
// re-queueing a failed PATCH after 1 s, no finalizers, no progress records, no diff-base.
// Same protocol as konductor-child.mjs: `{"ready":true}` once listed and watching, then the result.
import {
  CustomObjectsApi,
  KubeConfig,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { benchResource, finishRun, runMeters } from './child-common.mjs';

const [kubeconfigPath, namespace, expectedText, concurrencyText] = process.argv.slice(2);
const expected = Number(expectedText);
const concurrency = Number(concurrencyText);
const kc = new KubeConfig();
kc.loadFromFile(kubeconfigPath);
const meters = runMeters();

const ids = {
  group: benchResource.group,
  version: benchResource.version,
  plural: benchResource.plural,
  namespace,
};
const api = kc.makeApiClient(CustomObjectsApi);
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const writtenMs = [];
const finished = new Set();

// A minimal semaphore: a released slot passes straight to the next waiter.
let active = 0;
const waiting = [];
const acquire = () =>
  active < concurrency
    ? (active++, Promise.resolve())
    : new Promise((resolve) => waiting.push(resolve));
const release = () => {
  const next = waiting.shift();
  if (next) next();
  else active--;
};

async function handle(object) {
  if (object.status?.seen === object.spec?.idx) return; // already handled (our own write coming back)
  const name = object.metadata.name;
  await acquire();
  try {
    const startedAt = Date.now();
    await api.patchNamespacedCustomObjectStatus(
      { ...ids, name, body: { status: { seen: object.spec.idx, startedAt } } },
      mergePatch,
    );
    if (typeof object.spec.sentAt === 'number') writtenMs.push(Date.now() - object.spec.sentAt);
    if (!finished.has(name)) {
      finished.add(name);
      if (finished.size === expected) finish();
    }
  } catch (error) {
    process.stderr.write(
      `naive: patching ${name} failed (${error?.code ?? error}); again in 1 s\n`,
    );
    setTimeout(() => void handle(object), 1_000);
  } finally {
    release();
  }
}

const informer = makeInformer(
  kc,
  `/apis/${benchResource.group}/${benchResource.version}/namespaces/${namespace}/${benchResource.plural}`,
  () => api.listNamespacedCustomObject(ids),
);
informer.on('add', (object) => void handle(object));
informer.on('update', (object) => void handle(object));
let stopping = false;
informer.on('error', (error) => {
  if (stopping) return; // stop() aborts the watch, which reports as an error
  process.stderr.write(`naive: informer error (${error?.message ?? error}); restarting in 1 s\n`);
  setTimeout(() => void informer.start(), 1_000);
});
await informer.start();
meters.ready();

function finish() {
  stopping = true;
  void finishRun({
    result: { ...meters.result(expected), writtenMs },
    stop: () => informer.stop(),
  });
}
