// The operator side of the watch/reactor benchmark, in its own process so its peak RSS is its own,
// and on the compiled framework (dist/), as a deployed operator runs: no TypeScript loader in memory.
// Watches every widget in one namespace through the watch stream and the reactor with a no-op
// processor, and prints one JSON line once `expected` objects have been processed.
import { KubeConfig } from '@kubernetes/client-node';
import { ApiClient, Reactor, watchResource } from '../dist/framework/index.js';

const [kubeconfigPath, namespace, expectedText] = process.argv.slice(2);
const expected = Number(expectedText);
const widgets = { group: 'test.konductor.dev', version: 'v1', plural: 'widgets', kind: 'Widget', namespaced: true, hasStatus: true };
const kc = new KubeConfig();
kc.loadFromFile(kubeconfigPath);
const client = new ApiClient(kc);
const baselineRssMb = process.memoryUsage.rss() / 2 ** 20;

let processed = 0;
let peakRss = process.memoryUsage.rss();
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 20);
const started = performance.now();
const round = (value) => Math.round(value * 100) / 100;
const reactor = new Reactor(async () => {
  processed += 1;
  if (processed === expected) {
    const seconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    peakRss = Math.max(peakRss, process.resourceUsage().maxRSS * 1024);
    const result = {
      objects: expected,
      seconds: round(seconds),
      eventsPerSecond: Math.round(expected / seconds),
      peakRssMb: round(peakRss / 2 ** 20),
      rssAfterImportsMb: round(baselineRssMb),
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
    await reactor.stop(1_000);
    client.close();
    process.exit(0);
  }
});
reactor.consume(watchResource(client, widgets, { namespace }), undefined);
