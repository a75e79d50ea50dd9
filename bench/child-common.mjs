// Shared by the operator-side processes of the benchmark (bench/*-child.mjs). Loads nothing of the
// framework itself, so the naive baseline's process carries none of it.

/**
 * The framework in one object: the `konductor` entry point plus the building blocks the children drive
 * directly (the Reactor, `watchResource`, `MetricsRecorder`), which no entry point exports. Compiled
 * (dist/, as deployed) unless BENCH_FRAMEWORK names another root entry (the smoke test's sources), whose
 * modules sit beside it with the same extension.
 */
export async function loadFramework() {
  const root = new URL(
    process.env.BENCH_FRAMEWORK ?? new URL('../dist/framework/index.js', import.meta.url).href,
  );
  const extension = root.pathname.slice(root.pathname.lastIndexOf('.'));
  const modules = ['reactor/reactor', 'watching/watch-stream', 'observability/metrics'];
  const parts = await Promise.all(
    [root, ...modules.map((module) => new URL(`${module}${extension}`, root))].map(
      (url) => import(url.href),
    ),
  );
  return Object.assign({}, ...parts);
}

export const benchResource = {
  apiVersion: 'bench.konductor.dev/v1',
  group: 'bench.konductor.dev',
  version: 'v1',
  plural: 'benchobjects',
};

/** One JSON line to the parent. */
export function send(message) {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

/**
 * Samples the process's memory every 20 ms; `stop()` returns the peak RSS in MB (also counting the
 * kernel's maxRSS) and, at that peak, how much of it was V8's heap (reserved, and in use).
 */
export function sampleRss() {
  const mb = (bytes) => Math.round((bytes / 2 ** 20) * 100) / 100;
  let peak = process.memoryUsage();
  const timer = setInterval(() => {
    const now = process.memoryUsage();
    if (now.rss > peak.rss) peak = now;
  }, 20);
  return {
    stop() {
      clearInterval(timer);
      return {
        peakRssMb: mb(Math.max(peak.rss, process.resourceUsage().maxRSS * 1024)),
        heapAtPeakMb: mb(peak.heapTotal),
        heapUsedAtPeakMb: mb(peak.heapUsed),
      };
    },
  };
}

/**
 * Starts `framework`'s operator on the bench namespace with `registry` (quiet logger, the framework's
 * own kubeconfig loader, so client-node's generated API is never loaded, as deployed) and reports each
 * PATCH of a bench object that the API server accepted to `onPatch({ name, status })`.
 */
export async function startBenchOperator(
  framework,
  { kubeconfigPath, namespace, concurrency, registry, onPatch, storage = 'annotations', tracing },
) {
  return framework
    .createOperator({
      tracing,
      kubeConfig: framework.loadKubeconfig({ path: kubeconfigPath }),
      registry,
      namespaces: [namespace],
      concurrency,
      storage,
      logger: await benchLogger(framework),
      onRequest: (method, path, status) => {
        if (method !== 'PATCH' || status >= 300) return;
        const target = objectOfPath(path);
        if (target) onPatch(target);
      },
    })
    .start();
}

/** Tracing on when BENCH_OTLP_URL names a receiver (the tracing variant of catch-up); undefined otherwise. */
export async function benchTracing(framework) {
  const url = process.env.BENCH_OTLP_URL;
  return url ? framework.loadTracing({ url, serviceName: 'bench' }) : undefined;
}

/** Quiet, unless BENCH_LOG names a level: then the operator's log lines go to stderr (stdout carries the messages). */
async function benchLogger(framework) {
  const level = process.env.BENCH_LOG;
  if (!level) return framework.silentLogger();
  const { pino } = await import('pino');
  return pino({ level }, pino.destination(2));
}

/** The object name and whether it is the status subresource, from a bench object's API path. */
export function objectOfPath(path) {
  const parts = path.split('/');
  const at = parts.indexOf(benchResource.plural);
  if (at < 0 || at + 1 >= parts.length) return undefined;
  return { name: parts[at + 1], status: parts[at + 2] === 'status' };
}

/** CPU time (user + system) this process has used so far, in seconds. */
export function cpuSeconds() {
  const cpu = process.cpuUsage();
  return Math.round((cpu.user + cpu.system) / 1000) / 1000;
}

/**
 * How fast `objects` were done between `started` and `until` (performance.now() times): `{ objects,
 * seconds, [rateName] }`, the seconds to 10 ms, the rate in whole objects per second.
 */
export function throughput(
  objects,
  started,
  { until = performance.now(), rateName = 'objectsPerSecond' } = {},
) {
  const seconds = (until - started) / 1000;
  return {
    objects,
    seconds: Math.round(seconds * 100) / 100,
    [rateName]: Math.round(objects / seconds),
  };
}

/**
 * The meters of a catch-up run, started now: wall time, peak memory ({@link sampleRss}) and CPU time, the
 * CPU time at `ready()` (the listing's share) kept apart. `ready()` also tells the parent; `result(objects)`
 * stops the memory sampler and gives `{ objects, seconds, objectsPerSecond, peakRssMb, heapAtPeakMb,
 * heapUsedAtPeakMb, cpuSeconds, cpuSecondsAtReady }`.
 */
export function runMeters() {
  const started = performance.now();
  const rss = sampleRss();
  let cpuSecondsAtReady = 0;
  return {
    ready() {
      cpuSecondsAtReady = cpuSeconds();
      send({ ready: true });
    },
    result(objects) {
      return {
        ...throughput(objects, started),
        ...rss.stop(),
        cpuSeconds: cpuSeconds(),
        cpuSecondsAtReady,
      };
    },
  };
}

/**
 * Ends a child: sends `{ result }` to the parent (when given), waits for `stop()` (the operator's, or
 * whatever the child runs, to shut down) and exits 0, so the parent sees the result before the exit.
 */
export async function finishRun({ result, stop }) {
  if (result !== undefined) send({ result });
  await stop();
  process.exit(0);
}

/**
 * Starts one replica under leader election on the bench namespace: a 5 s Lease, 3 s renew deadline and
 * 0.5 s retry (takeovers within seconds), a quiet logger, `options` added (sharding, metrics, …).
 */
export async function startReplica(
  framework,
  { kubeconfigPath, namespace, lease, replica, registry, election = {}, ...options },
) {
  return framework
    .createOperator({
      kubeConfig: framework.loadKubeconfig({ path: kubeconfigPath }),
      registry,
      namespaces: [namespace],
      logger: await benchLogger(framework),
      leaderElection: {
        namespace,
        name: lease,
        identity: replica,
        leaseDuration: 5,
        renewDeadline: 3,
        retryPeriod: 0.5,
        ...election,
      },
      ...options,
    })
    .start();
}
