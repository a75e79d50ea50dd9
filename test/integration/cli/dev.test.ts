// `konductor dev`: edit a handler file while it runs, and the new code handles the next object.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { exitWithin, killChildGroup, spawnKonductor, type Run } from '../../support/cli.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { Widgets, installWidgetCrd, readWidget } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const framework = pathToFileURL(join(root, 'src/framework/index.ts')).href;

/** A handler file that marks new widgets with `phase`. */
function handlers(phase: string): string {
  return `import { on, type ChangeContext } from '${framework}';

export class DevWidgets {
  @on.create('test.konductor.dev/v1', 'widgets')
  async created({ patch }: ChangeContext): Promise<void> {
    patch.status.phase = '${phase}';
  }
}
`;
}

const children: ChildProcess[] = [];
let kc: KubeConfig;
let kubeconfigPath: string;
let scratch: string;

/** `konductor dev` from the source tree, in its own process group (the operator child has another). */
function konductorDev(file: string, namespace: string): Run {
  const run = spawnKonductor(
    'bin/konductor.mjs',
    [
      'dev',
      file,
      '--kubeconfig',
      kubeconfigPath,
      '-n',
      namespace,
      '--log-format',
      'json',
      '--log-level',
      'debug',
      '--health-port',
      '0',
    ],
    { cwd: root, detached: true },
  );
  children.push(run.child);
  return run;
}

interface LogLine {
  msg?: string;
  ms?: number;
}

function logLines(run: Run): LogLine[] {
  return run
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

function count(run: Run, pattern: RegExp): number {
  return logLines(run).filter((line) => pattern.test(line.msg ?? '')).length;
}

beforeAll(async () => {
  kc = sharedKubeConfig();
  kubeconfigPath = process.env.KONDUCTOR_TEST_KUBECONFIG!;
  await installWidgetCrd(kc);
  scratch = mkdtempSync(join(tmpdir(), 'konductor-dev-'));
  // An ES module package, like a project made by konductor init.
  writeFileSync(join(scratch, 'package.json'), '{ "type": "module" }\n');
});

afterEach(() => {
  for (const child of children.splice(0)) killChildGroup(child);
});

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

describe('konductor dev', () => {
  test('an edited handler file handles the next object with the new code, and SIGTERM stops everything', async () => {
    const namespace = await uniqueNamespace(kc, 'dev');
    const file = join(scratch, 'handlers.ts');
    writeFileSync(file, handlers('First'));
    const run = konductorDev(file, namespace);
    const widgets = new Widgets(kc, namespace);

    await waitFor(() => count(run, /^started in \d+ ms/) === 1, {
      what: `konductor dev starts (stdout: ${run.stdout()} stderr: ${run.stderr()})`,
      timeoutMs: 40_000,
    });
    await widgets.create('before');
    await waitFor(async () => (await readWidget(namespace, 'before'))?.status?.phase === 'First', {
      what: 'the first code handles a widget',
      timeoutMs: 20_000,
    });

    // Steady state: the spare operator (node, tsx and konductor loaded) waits for the change.
    await waitFor(() => count(run, /^a booted operator waits/) === 1, {
      what: 'a spare operator is booted',
      timeoutMs: 40_000,
    });
    const savedAt = Date.now();
    writeFileSync(file, handlers('Second'));
    await waitFor(() => count(run, /^reloaded in \d+ ms/) === 1, {
      what: 'konductor dev reloads',
      timeoutMs: 20_000,
    });
    const reloadMs = logLines(run).find((line) => /^reloaded in/.test(line.msg ?? ''))!.ms!;
    await widgets.create('after');
    await waitFor(async () => (await readWidget(namespace, 'after'))?.status?.phase === 'Second', {
      what: 'the edited code handles the next widget',
      timeoutMs: 20_000,
    });
    process.stdout.write(
      `konductor dev: reloaded in ${reloadMs} ms (logged); save to new code handling an object: ${Date.now() - savedAt} ms\n`,
    );
    expect((await readWidget(namespace, 'before'))?.status?.phase).toBe('First');

    run.child.kill('SIGTERM');
    expect(await exitWithin(run, 20_000)).toBe(0);
    expect(run.stderr()).toBe('');
  });

  test('a file that fails to load is reported, dev keeps watching, and fixing the file starts the operator again', async () => {
    const namespace = await uniqueNamespace(kc, 'dev');
    const file = join(scratch, 'broken.ts');
    writeFileSync(file, handlers('Fine'));
    const run = konductorDev(file, namespace);
    await waitFor(() => count(run, /^started in \d+ ms/) === 1, {
      what: 'konductor dev starts',
      timeoutMs: 40_000,
    });

    writeFileSync(file, `${handlers('Fine')}\nthrow new Error('the database URL is not set');\n`);
    await waitFor(() => count(run, /^the operator exited/) === 1, {
      what: 'the failed start is reported',
      timeoutMs: 20_000,
    });
    expect(run.stderr()).toMatch(
      /konductor: cannot load .*broken\.ts: the database URL is not set/,
    );
    expect(run.child.exitCode).toBeNull();

    writeFileSync(file, handlers('Fixed'));
    await waitFor(() => count(run, /^reloaded in \d+ ms/) === 1, {
      what: 'the fixed file starts again',
      timeoutMs: 20_000,
    });
    await new Widgets(kc, namespace).create('w1');
    await waitFor(async () => (await readWidget(namespace, 'w1'))?.status?.phase === 'Fixed', {
      what: 'the fixed code handles a widget',
      timeoutMs: 20_000,
    });

    run.child.kill('SIGTERM');
    expect(await exitWithin(run, 20_000)).toBe(0);
  });
});
