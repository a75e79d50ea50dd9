// Operator side of the catch-up benchmark (compiled framework, own process): a create handler copies
// spec.size to status.seen on every widget in one namespace. Prints one JSON line once every object's
// writes have landed.
import { KubeConfig } from '@kubernetes/client-node';
import { createOperator, Registry, silentLogger } from '../dist/framework/index.js';

const [kubeconfigPath, namespace, objectsText, concurrencyText] = process.argv.slice(2);
const objects = Number(objectsText);
const kc = new KubeConfig();
kc.loadFromFile(kubeconfigPath);
const started = performance.now();
let peakRss = process.memoryUsage.rss();
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 20);
let done = 0;
const registry = new Registry().change(
  'create',
  { apiVersion: 'test.konductor.dev/v1', name: 'widgets' },
  async ({ spec, patch }) => {
    patch.status.seen = spec.size;
    patch.status.handledAt = new Date().toISOString();
  },
  { id: 'bench-catch-up' },
);
const operator = createOperator({
  kubeConfig: kc,
  registry,
  namespaces: [namespace],
  concurrency: Number(concurrencyText),
  logger: silentLogger(),
  // The object PATCH (diff-base) is each object's last write: count those that succeeded.
  onRequest: (method, path, status) => {
    if (method === 'PATCH' && !path.endsWith('/status') && status < 300 && ++done === objects) finish();
  },
}).start();

function finish() {
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  peakRss = Math.max(peakRss, process.resourceUsage().maxRSS * 1024);
  const round = (v) => Math.round(v * 100) / 100;
  process.stdout.write(`${JSON.stringify({ objects, seconds: round(seconds), objectsPerSecond: Math.round(objects / seconds), peakRssMb: round(peakRss / 2 ** 20) })}\n`);
  void operator.stop(2_000).then(() => process.exit(0));
}
