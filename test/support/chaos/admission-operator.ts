import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../../../src/testing/index.js';
import { cleanEnv } from '../cli.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** What {@link AdmissionOperator} runs. */
export interface AdmissionOperatorOptions {
  /** Path of the kubeconfig file the operator uses. */
  kubeconfig: string;
  namespace: string;
  /** Its identity, which names its webhook configuration. */
  identity: string;
  /** `webhooks.clientCA`: the API server's client CA, or undefined to accept any caller. */
  clientCA?: string;
  /** `--max-old-space-size` in MB; default 192, the Deployment's. */
  heapMb?: number;
}

/**
 * The launcher: `createOperator` serving the admission fixture's webhook at https://127.0.0.1 on a
 * free port, JSON logs, and a `memory` line every 200 ms (heap used, resident set, peak resident set).
 */
const LAUNCHER = `
const { register } = await import('tsx/esm/api');
register();
const config = JSON.parse(process.env.ADMISSION_OPERATOR);
const { KubeConfig } = await import('@kubernetes/client-node');
const { createOperator, createLogger } = await import(config.framework);
const { AdmissionWidgets } = await import(config.fixture);
const kubeConfig = new KubeConfig();
kubeConfig.loadFromFile(config.kubeconfig);
const logger = createLogger({ level: 'info', format: 'json' });
setInterval(() => {
  const { heapUsed, rss } = process.memoryUsage();
  logger.info({ heapUsed, rss, maxRss: process.resourceUsage().maxRSS * 1024 }, 'memory');
}, 200).unref();
const operator = createOperator({
  kubeConfig,
  handlers: [new AdmissionWidgets()],
  namespaces: [config.namespace],
  identity: config.identity,
  logger,
  webhooks: { port: 0, url: 'https://127.0.0.1', clientCA: config.clientCA },
}).start();
void operator.ready.then(() => logger.info('initial listings done; watching for changes'));
process.on('SIGTERM', () => operator.stop(10000).then(() => process.exit(0), () => process.exit(1)));
`;

/** Peak memory the operator reported. */
export interface MemoryPeaks {
  heapUsedMb: number;
  rssMb: number;
}

/** The admission fixture's operator as a child process under the Deployment's heap cap. */
export class AdmissionOperator {
  private child: ChildProcess | undefined;
  private output = '';
  /** Its exit code or signal, once it has exited. */
  exit: number | string | undefined;
  private readonly peaks: MemoryPeaks = { heapUsedMb: 0, rssMb: 0 };

  constructor(private readonly options: AdmissionOperatorOptions) {}

  start(): this {
    const { options } = this;
    const env: NodeJS.ProcessEnv = {
      ...cleanEnv(),
      ADMISSION_OPERATOR: JSON.stringify({
        framework: new URL('../../../src/framework/index.ts', import.meta.url).href,
        fixture: new URL('../../fixtures/handlers/admission-widgets.ts', import.meta.url).href,
        kubeconfig: options.kubeconfig,
        namespace: options.namespace,
        identity: options.identity,
        clientCA: options.clientCA,
      }),
    };
    const args = [
      `--max-old-space-size=${options.heapMb ?? 192}`,
      '--input-type=module',
      '-e',
      LAUNCHER,
    ];
    const child = spawn(process.execPath, args, {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    const collect = (chunk: Buffer): void => {
      this.output += chunk.toString();
      this.readPeaks(chunk.toString());
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    child.once('exit', (code, signal) => (this.exit = code ?? signal ?? 'unknown'));
    return this;
  }

  get alive(): boolean {
    return this.child !== undefined && this.exit === undefined;
  }

  /** The webhook server's port, once it listens. */
  async webhookPort(timeoutMs = 60_000): Promise<number> {
    let port: number | undefined;
    await waitFor(
      () => {
        if (!this.alive)
          throw new Error(
            `the admission operator exited (${String(this.exit)}) before serving:\n${this.tail()}`,
          );
        port = this.logs().find(
          (line) => line.msg === 'webhook server listening' && typeof line.port === 'number',
        )?.port as number | undefined;
        return (
          port !== undefined &&
          this.output.includes('"msg":"initial listings done; watching for changes"')
        );
      },
      { what: 'the admission operator to serve its webhook', timeoutMs, intervalMs: 50 },
    );
    return port!;
  }

  /** The highest heap use and resident set it reported (the peak resident set as the kernel counts it). */
  get memory(): MemoryPeaks {
    return { ...this.peaks };
  }

  /** SIGTERM, then SIGKILL after `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    const child = this.child;
    if (!child || this.exit !== undefined) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }

  /** The last lines it printed, memory lines left out. */
  tail(lines = 20): string {
    return this.output
      .split('\n')
      .filter((line) => !line.includes('"msg":"memory"'))
      .slice(-lines)
      .join('\n');
  }

  private logs(): Array<Record<string, unknown>> {
    return this.output.split('\n').flatMap((line) => {
      try {
        return line.startsWith('{') ? [JSON.parse(line) as Record<string, unknown>] : [];
      } catch {
        return [];
      }
    });
  }

  private readPeaks(text: string): void {
    for (const match of text.matchAll(/"heapUsed":(\d+),"rss":(\d+),"maxRss":(\d+)/g)) {
      this.peaks.heapUsedMb = Math.max(this.peaks.heapUsedMb, Math.round(Number(match[1]) / 1e6));
      this.peaks.rssMb = Math.max(this.peaks.rssMb, Math.round(Number(match[3]) / 1e6));
    }
  }
}
