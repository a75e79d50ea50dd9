import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  createOperator,
  on,
  PermanentError,
  silentLogger,
  StartupError,
  TemporaryError,
  type ActivityContext,
  type ChangeContext,
  type Operator,
} from '../../../src/framework/index.js';
import { exitWithin, spawnKonductor, type Run } from '../../support/cli.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import {
  Widgets,
  installWidgetCrd,
  readWidget,
  WIDGET_API_VERSION,
} from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';

const API = WIDGET_API_VERSION;
const root = fileURLToPath(new URL('../../..', import.meta.url));
const fixture = 'test/fixtures/handlers/lifecycle.ts';

async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: response.status, body: await response.text() };
}

/** The `msg` of each JSON log line a run printed. */
function messages(run: Run): string[] {
  return run
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => (JSON.parse(line) as { msg?: string }).msg ?? '');
}

let kc: KubeConfig;
const children: ChildProcess[] = [];
let operator: Operator | undefined;

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installWidgetCrd(kc);
});

afterEach(async () => {
  await operator?.stop(2_000);
  operator = undefined;
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

function konductor(args: string[], env?: NodeJS.ProcessEnv): Run {
  const run = spawnKonductor('bin/konductor.mjs', args, { cwd: root, env });
  children.push(run.child);
  return run;
}

describe('startup handlers', () => {
  test('run before the first handler, which sees what they put in the operator memo', async () => {
    const namespace = await uniqueNamespace(kc, 'startup');
    await new Widgets(kc, namespace).create('w1'); // there before the operator: handled from the initial listing
    const memo: Record<string, unknown> = {};
    let attempts = 0;
    class Handlers {
      @on.startup()
      async connect(ctx: ActivityContext): Promise<void> {
        // One retry, so the handler would have had time to run first if it did not wait.
        if (++attempts === 1) throw new TemporaryError('database still starting', { delay: 1 });
        ctx.memo.phase = 'Connected';
      }

      @on.create(API, 'widgets')
      async created({ patch }: ChangeContext): Promise<void> {
        patch.status.phase = String(memo.phase ?? 'startup had not run');
      }
    }
    operator = createOperator({
      kubeConfig: kc,
      handlers: [Handlers],
      namespaces: [namespace],
      logger: silentLogger(),
      memo,
    }).start();
    await operator.ready;

    await waitFor(async () => (await readWidget(namespace, 'w1'))?.status?.phase !== undefined, {
      what: 'w1 to be handled',
    });
    expect((await readWidget(namespace, 'w1'))?.status?.phase).toBe('Connected');
    expect(attempts).toBe(2);
  });

  test('a PermanentError makes ready reject naming the handler; no request is made, /healthz stays alive and /readyz unready', async () => {
    const namespace = await uniqueNamespace(kc, 'startup-fails');
    class Handlers {
      @on.startup()
      async license(): Promise<void> {
        throw new PermanentError('no license key in LICENSE_KEY');
      }

      @on.create(API, 'widgets')
      async created(): Promise<void> {}
    }
    const requests: string[] = [];
    operator = createOperator({
      kubeConfig: kc,
      handlers: [Handlers],
      namespaces: [namespace],
      logger: silentLogger(),
      health: { port: 0, host: '127.0.0.1' },
      onRequest: (method, path) => requests.push(`${method} ${path}`),
    }).start();
    const port = (await operator.serveHealth())!;

    const failure = await operator.ready.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(StartupError);
    expect((failure as Error).message).toBe(
      'startup handler Handlers.license failed, so the operator does not start: no license key in LICENSE_KEY',
    );
    expect(requests).toEqual([]); // not even a discovery request
    expect((await get(port, '/healthz')).status).toBe(200);
    const ready = await get(port, '/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toContain(
      'startup: startup handler Handlers.license failed, so the operator does not start: no license key in LICENSE_KEY\n',
    );
  });

  test('konductor run exits 1 with one line naming the failed startup handler', async () => {
    const namespace = await uniqueNamespace(kc, 'cli-startup');
    const run = konductor(
      [
        'run',
        fixture,
        '--kubeconfig',
        process.env.KONDUCTOR_TEST_KUBECONFIG!,
        '-n',
        namespace,
        '--health-port',
        '0',
        '--standalone',
      ],
      {
        LIFECYCLE_FAIL: '1',
      },
    );
    expect(await exitWithin(run, 40_000)).toBe(1);
    expect(
      run
        .stderr()
        .split('\n')
        .filter((line) => line !== ''),
    ).toEqual([
      'konductor: startup handler Lifecycle.connect failed, so the operator does not start: no license key in LICENSE_KEY',
    ]);
  });
});

describe('cleanup handlers', () => {
  test('run when konductor run gets SIGTERM, after the drain and before the operator stops', async () => {
    const namespace = await uniqueNamespace(kc, 'cli-cleanup');
    const run = konductor([
      'run',
      fixture,
      '--kubeconfig',
      process.env.KONDUCTOR_TEST_KUBECONFIG!,
      '-n',
      namespace,
      '--log-format',
      'json',
      '--health-port',
      '0',
      '--lease-namespace',
      namespace,
    ]);
    await new Widgets(kc, namespace).create('w1');
    await waitFor(async () => (await readWidget(namespace, 'w1'))?.status?.phase === 'Ready', {
      what: 'the widget becomes Ready',
      timeoutMs: 40_000,
    });
    expect(messages(run)).toContain('startup ran');
    expect(messages(run)).not.toContain('cleanup ran');

    run.child.kill('SIGTERM');
    expect(await exitWithin(run, 20_000)).toBe(0);
    const logged = messages(run);
    expect(logged.filter((msg) => msg === 'cleanup ran')).toHaveLength(1);
    expect(logged.indexOf('cleanup ran')).toBeLessThan(logged.indexOf('operator stopped'));
  });
});

describe('probe handlers', () => {
  test('their results show in /healthz JSON under their ids; a failing one is reported and fails /healthz', async () => {
    const namespace = await uniqueNamespace(kc, 'probes');
    let healthy = true;
    class Handlers {
      @on.create(API, 'widgets')
      async created(): Promise<void> {}

      @on.probe({ id: 'queue-depth' })
      depth(): number {
        return 3;
      }

      @on.probe({ id: 'database' })
      async database(): Promise<string> {
        if (!healthy) throw new Error('database unreachable');
        return 'ok';
      }
    }
    const logger = silentLogger();
    operator = createOperator({
      kubeConfig: kc,
      handlers: [Handlers],
      namespaces: [namespace],
      logger,
      health: { port: 0, host: '127.0.0.1' },
    }).start();
    const port = (await operator.serveHealth())!;
    await operator.ready;

    const ok = await get(port, '/healthz');
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toEqual({
      status: 'ok',
      failures: [],
      probes: { 'queue-depth': 3, database: 'ok' },
    });

    // A second operator whose database probe fails (no waiting out the first one's 10 s cache).
    healthy = false;
    const failing = createOperator({
      kubeConfig: kc,
      handlers: [Handlers],
      namespaces: [namespace],
      logger,
      health: { port: 0, host: '127.0.0.1' },
    }).start();
    try {
      const failingPort = (await failing.serveHealth())!;
      await failing.ready;
      const answer = await get(failingPort, '/healthz');
      expect(answer.status).toBe(503);
      expect(JSON.parse(answer.body)).toEqual({
        status: 'failing',
        failures: ['probe database: database unreachable'],
        probes: { 'queue-depth': 3, database: { error: 'database unreachable' } },
      });
    } finally {
      await failing.stop(2_000);
    }
  });
});
