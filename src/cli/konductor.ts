// The `konductor` command line: `konductor run|dev|init|types|manifests|disconnect|uninstall ...`.
// Started by bin/konductor.mjs (or `tsx src/cli/konductor.ts`); each command's flags and help are in ./options/.
// Commands other than run are imported when used, so `run` starts without loading their code.
import { readFileSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';
import { ApiClient } from '../framework/api/api-client.js';
import { loadKubeconfig, type ClusterAccess } from '../framework/api/kubeconfig.js';
import { createLogger, type Logger } from '../framework/observability/logger.js';
import { loadTracing, type Tracing } from '../framework/observability/tracing.js';
import type { Registry } from '../framework/registry/registry.js';
import { HealthServerError } from '../framework/runtime/health-server.js';
import {
  createOperator,
  type Operator,
  type OperatorOptions,
} from '../framework/runtime/operator.js';
import { compileHandlers } from './compile-handlers.js';
import { resumeOptimizingCompiler } from './optimizing-compiler.js';
import { heapFlagOverridingMaxHeap } from './heap-size.js';
import { loadHandlers } from './load-handlers.js';
import { podNamespace } from './own-namespace.js';
import { tracingSetting } from './tracing-setting.js';
import {
  DEV_BOOTED_MESSAGE,
  DEV_CHILD_ENV,
  DEV_READY_MESSAGE,
  DEV_START_MESSAGE,
} from './commands/dev-protocol.js';
import { helpFor, parseCommandLine } from './command-line.js';
import type { RunOptions } from './options/run.js';
import { UsageError } from './validators.js';

/** How long the start-up reachability check waits for the API server. */
const REACHABILITY_TIMEOUT_MS = 5_000;
/** How long a clean stop may drain in-flight handlers. */
const STOP_DEADLINE_MS = 30_000;

/** A failure before the operator started: printed as one line, exit code 1. */
class StartError extends Error {
  override readonly name = 'StartError';
}

async function main(argv: readonly string[]): Promise<void> {
  const command = parseCommandLine(argv, process.env);
  switch (command.kind) {
    case 'help':
      process.stdout.write(helpFor(command.command));
      return;
    case 'version':
      process.stdout.write(`${packageVersion()}\n`);
      return;
    case 'run':
      return run(command.options);
    case 'dev': {
      const { dev } = await import('./commands/dev.js');
      return dev(command.options, command.runArgs);
    }
    case 'init': {
      const { init } = await import('./commands/init.js');
      return init(command.options, packageVersion());
    }
    case 'types': {
      const { typesCommand } = await import('./commands/types.js');
      return typesCommand(command.args);
    }
    case 'manifests': {
      await registerTypeScript(); // it imports the user's handler files, TypeScript included
      const { manifestsCommand } = await import('./commands/manifests.js');
      return manifestsCommand(command.args);
    }
    case 'disconnect': {
      await registerTypeScript(); // it loads the handler files, as run does, for the resources they declare
      const { disconnect } = await import('./commands/disconnect.js');
      return disconnect(command.options);
    }
    case 'uninstall': {
      await registerTypeScript();
      const { uninstall } = await import('./commands/uninstall.js');
      return uninstall(command.options);
    }
  }
}

/** `konductor run`: connect, load handlers, start the operator, and stop cleanly on SIGINT/SIGTERM. */
async function run(options: RunOptions): Promise<void> {
  // Under `konductor dev`, a booted spare waits here until a change needs a new operator.
  if (devChild()) await startSignal();
  const kubeConfig = loadKubeConfig(options);
  const client = new ApiClient(kubeConfig);
  let namespaces: string[] | undefined;
  try {
    const version = await checkReachable(client);
    namespaces = resolveNamespaces(options);
    const logger = createLogger({ level: options.logLevel, format: options.logFormat });
    logger.info(
      {
        server: client.server,
        version,
        namespaces: namespaces ?? 'all',
        heapLimitMiB: heapLimitMiB(),
      },
      'connected to the cluster',
    );
    const overriding = heapFlagOverridingMaxHeap({
      maxHeapMiB: options.maxHeap,
      nodeOptions: process.env.NODE_OPTIONS,
      execArgv: process.execArgv,
    });
    if (overriding)
      logger.warn(
        { maxHeapMiB: options.maxHeap, nodeFlag: overriding },
        `--max-heap has no effect: node was started with ${overriding}; give one or the other`,
      );
    const registry = await loadHandlers(options.files, {
      compileTypeScript: fromSource() ? undefined : compileHandlers,
      beforeTypeScript: registerTypeScript,
    });
    const tracing = await startTracing(options, logger);
    const operator = createOperator({
      ...operatorOptionsFrom(options, { kubeConfig, registry, namespaces, logger }),
      tracing,
    });
    await serveHealth(operator);
    operator.start();
    stopOnSignals(operator, logger, tracing);
    // Lost leadership: work has stopped; exit so the pod restarts as a fresh candidate (as controller-runtime does).
    void operator.lostLeadership.then(async () => {
      await tracing?.shutdown(2_000);
      process.exit(1);
    });
    void operator.ready.then(
      () => {
        resumeOptimizingCompiler();
        logger.info('initial listings done; watching for changes');
        if (devChild()) process.send?.(DEV_READY_MESSAGE);
      },
      // The operator refused to start (a startup handler failed for good): exit 1 with its reason, as for any failed start.
      (error: unknown) => {
        process.stderr.write(`konductor: ${messageOf(error)}\n`);
        process.exit(1);
      },
    );
    // Under `konductor dev`: the parent is gone (killed, crashed) when its IPC channel closes; stop too.
    if (devChild()) process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
  } finally {
    client.close();
  }
}

/**
 * Opens the health port before any work starts: an operator whose probes cannot be served must not
 * run (the kubelet would restart it anyway, and without them nobody sees it stall), so a taken port
 * ends the run with exit code 1 and the reason, instead of a logged error and an operator running on.
 */
async function serveHealth(operator: Operator): Promise<void> {
  try {
    await operator.serveHealth();
  } catch (error) {
    if (error instanceof HealthServerError) throw new StartError(error.message);
    throw error;
  }
}

/** Whether this process is the operator that `konductor dev` restarts (it talks to it over IPC). */
function devChild(): boolean {
  return process.env[DEV_CHILD_ENV] === '1' && typeof process.send === 'function';
}

/** Resolves when the `konductor dev` parent says to start; exits when the parent goes away first. */
function startSignal(): Promise<void> {
  return new Promise((resolve) => {
    const onMessage = (message: unknown): void => {
      if (message !== DEV_START_MESSAGE) return;
      process.off('message', onMessage);
      process.off('disconnect', onDisconnect);
      resolve();
    };
    const onDisconnect = (): void => process.exit(0);
    process.on('message', onMessage);
    process.once('disconnect', onDisconnect);
    process.send?.(DEV_BOOTED_MESSAGE);
  });
}

/** The operator's options for a run. */
export function operatorOptionsFrom(
  run: RunOptions,
  context: {
    kubeConfig: ClusterAccess;
    registry: Registry;
    namespaces: string[] | undefined;
    logger: Logger;
  },
): OperatorOptions {
  return {
    kubeConfig: context.kubeConfig,
    registry: context.registry,
    namespaces: context.namespaces,
    identity: run.identity,
    storage: run.storage,
    concurrency: run.concurrency,
    handlerTimeout: run.handlerTimeout,
    logger: context.logger,
    health: { port: run.healthPort, handlerStall: run.stallTimeout },
    sharding: run.sharding,
    leaderElection: run.standalone
      ? undefined
      : {
          namespace: run.leaseNamespace ?? ownNamespace(),
          name: run.leaseName,
          warmStandby: run.warmStandby,
        },
    // Used only when the handlers declare @on.validate, @on.mutate or @on.convert.
    webhooks: {
      enabled: run.webhooks,
      port: run.webhookPort,
      url: run.webhookUrl,
      service: run.webhookService,
      clientCA: run.webhookClientCA === undefined ? undefined : readClientCA(run.webhookClientCA),
    },
  };
}

/** The PEM CA certificates of `--webhook-client-ca`; a usage error, saying what to give, when the file has none. */
function readClientCA(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(
      `--webhook-client-ca ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)}): give the PEM file of the CA that signs the API server's webhook client certificate`,
    );
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----'))
    throw new UsageError(
      `--webhook-client-ca ${path} holds no PEM certificate: give the CA that signs the API server's webhook client certificate`,
    );
  return text;
}

/** In a pod, its own namespace; elsewhere `default`. */
function ownNamespace(): string {
  return podNamespace() ?? 'default';
}

function loadKubeConfig(options: RunOptions): ClusterAccess {
  try {
    return loadKubeconfig({ path: options.kubeconfig, context: options.context });
  } catch (error) {
    throw new StartError(messageOf(error));
  }
}

/** One cheap request, so a wrong server or credentials fail at once instead of as endless watch retries. */
async function checkReachable(client: ApiClient): Promise<string | undefined> {
  try {
    const info = await client.request<{ gitVersion?: string } | undefined>('GET', '/version', {
      timeoutMs: REACHABILITY_TIMEOUT_MS,
    });
    return info?.gitVersion;
  } catch (error) {
    throw new StartError(
      `cannot reach the cluster at ${client.server}: ${messageOf(error).replace(/^GET \/version: /, '')}`,
    );
  }
}

/** Names and globs as given (the operator matches globs on every event); undefined means all namespaces. */
function resolveNamespaces(options: RunOptions): string[] | undefined {
  if (options.allNamespaces || options.namespaces.length === 0) return undefined;
  return options.namespaces;
}

/**
 * Handler files may be TypeScript: load them through tsx, unless this file already runs under it
 * (bin/konductor.mjs registers it for the sources; twice would transform every file twice).
 * Both hooks, like `node --import tsx`: a `.ts` file outside a `"type": "module"` package is
 * CommonJS, which the ESM hook alone cannot load. Imported only then: its hooks run on a thread of
 * their own, which an operator of JavaScript files does not need.
 */
async function registerTypeScript(): Promise<void> {
  if (fromSource()) return;
  const [esm, cjs] = await Promise.all([import('tsx/esm/api'), import('tsx/cjs/api')]);
  esm.register();
  cjs.register();
}

/**
 * Whether this CLI runs from the repository's sources, through the tsx that bin/konductor.mjs
 * registered: handler files there import the framework's sources, so they go through it too.
 */
function fromSource(): boolean {
  return import.meta.url.endsWith('.ts');
}

/** V8's heap ceiling in MiB, for the start-up log line: what bin/konductor's sizing gave node. */
function heapLimitMiB(): number {
  return Math.round(getHeapStatistics().heap_size_limit / 2 ** 20);
}

/** Loads the OpenTelemetry SDK when tracing is asked for (see {@link tracingSetting}); undefined otherwise. */
async function startTracing(options: RunOptions, logger: Logger): Promise<Tracing | undefined> {
  const setting = tracingSetting(options.tracing, process.env);
  for (const warning of setting.warnings) logger.warn(warning);
  if (!setting.on) return undefined;
  const tracing = await loadTracing({
    global: true,
    instanceId: process.env.POD_NAME,
    identity: options.identity,
    logger,
  });
  const endpoint =
    process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT ??
    'http://localhost:4318';
  logger.info({ endpoint }, 'tracing on: exporting OTLP over HTTP');
  return tracing;
}

/** First SIGINT/SIGTERM: drain and exit 0; a second one: exit at once with 130. */
function stopOnSignals(operator: Operator, logger: Logger, tracing?: Tracing): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting without waiting');
      process.exit(130);
    }
    stopping = true;
    logger.info({ signal }, 'stopping (send the signal again to exit at once)');
    operator.stop(STOP_DEADLINE_MS).then(
      async () => {
        await tracing?.shutdown(2_000);
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'stopping failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

function packageVersion(): string {
  // src/cli and dist/cli are both two levels below the package root.
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version?: string;
  };
  return pkg.version ?? 'unknown';
}

function messageOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s*\n\s*/g, ' ').trim();
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`konductor: ${messageOf(error)}\n`);
  process.exit(error instanceof UsageError ? 2 : 1);
});
