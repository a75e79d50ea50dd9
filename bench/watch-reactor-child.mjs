// The operator side of the watch/reactor benchmark, in its own process so its peak RSS is its own,
// and on the compiled framework (dist/), as a deployed operator runs: no TypeScript loader in memory.
// Watches every bench object in one namespace through the watch stream and the reactor with a no-op
// processor, and prints its result once `expected` objects have been processed.
import { benchResource, finishRun, loadFramework, sampleRss, throughput } from './child-common.mjs';

const [kubeconfigPath, namespace, expectedText] = process.argv.slice(2);
const expected = Number(expectedText);
const { ApiClient, Reactor, watchResource, loadKubeconfig } = await loadFramework();
const resource = {
  group: benchResource.group,
  version: benchResource.version,
  plural: benchResource.plural,
  kind: 'BenchObject',
  namespaced: true,
  hasStatus: true,
};
// The framework's own kubeconfig loader: as deployed, client-node's generated API is never loaded.
const kc = loadKubeconfig({ path: kubeconfigPath });
const client = new ApiClient(kc);
const baselineRssMb = process.memoryUsage.rss() / 2 ** 20;

let processed = 0;
const rss = sampleRss();
const started = performance.now();
const reactor = new Reactor(async () => {
  processed += 1;
  if (processed !== expected) return;
  await finishRun({
    result: {
      ...throughput(expected, started, { rateName: 'eventsPerSecond' }),
      ...rss.stop(),
      rssAfterImportsMb: Math.round(baselineRssMb * 100) / 100,
    },
    stop: async () => {
      await reactor.stop(1_000);
      client.close();
    },
  });
});
reactor.consume(watchResource(client, resource, { namespace }), undefined);
