// The operator side of the timer benchmark (compiled framework, own process): a no-op 1-second timer
// on every bench object in one namespace. After a warm-up it measures, over a window, timer lateness
// (actual minus planned start) and the process's CPU time as a share of one core.
import { benchResource, finishRun, loadFramework } from './child-common.mjs';

const [kubeconfigPath, namespace, objectsText, windowText] = process.argv.slice(2);
const objects = Number(objectsText);
const windowMs = Number(windowText) * 1000;
const { createOperator, MetricsRecorder, Registry, silentLogger, loadKubeconfig } =
  await loadFramework();
// The framework's own kubeconfig loader: as deployed, client-node's generated API is never loaded.
const kc = loadKubeconfig({ path: kubeconfigPath });
const ticked = new Set();
const registry = new Registry().timer(
  { apiVersion: benchResource.apiVersion, name: benchResource.plural },
  async ({ uid }) => void ticked.add(uid),
  {
    id: 'bench-tick',
    interval: 1,
  },
);
const metrics = new MetricsRecorder();
const operator = createOperator({
  kubeConfig: kc,
  registry,
  namespaces: [namespace],
  logger: silentLogger(),
  metrics,
}).start();
await operator.ready;
while (ticked.size < objects) await new Promise((resolve) => setTimeout(resolve, 100));
await new Promise((resolve) => setTimeout(resolve, 3_000)); // warm-up: finalizers written, schedules settled

const before = metrics.histograms.get('timer_lateness_seconds')?.snapshot();
const cpuBefore = process.cpuUsage();
const started = performance.now();
await new Promise((resolve) => setTimeout(resolve, windowMs));
const cpu = process.cpuUsage(cpuBefore);
const elapsedMs = performance.now() - started;
const lateness = metrics.histograms.get('timer_lateness_seconds');
const pick = (q) => (lateness ? lateness.quantile(q, before) * 1000 : 0);
const round = (v) => Math.round(v * 10) / 10;
await finishRun({
  result: {
    objects,
    windowSeconds: round(elapsedMs / 1000),
    ticks: (lateness?.count ?? 0) - (before?.count ?? 0),
    latenessMsP50: round(pick(0.5)),
    latenessMsP99: round(pick(0.99)),
    latenessMsMax: round(pick(1)),
    cpuPercentOfOneCore: round(((cpu.user + cpu.system) / 1000 / elapsedMs) * 100),
    // Of which in the kernel (each distinct timer expiry is a wakeup of the event loop).
    cpuSystemPercentOfOneCore: round((cpu.system / 1000 / elapsedMs) * 100),
    rssMb: round(process.memoryUsage.rss() / 2 ** 20),
  },
  stop: () => operator.stop(2_000),
});
