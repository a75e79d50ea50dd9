// What the Dockerfile packages, without a container engine: the built package (`npm pack`, whose
// `prepack` runs the build), installed with production dependencies only in a folder of its own,
// starts with `konductor run` on a TypeScript handler file and handles objects on the control plane.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { cleanEnv, exitWithin, spawnKonductor, type Run } from '../../support/cli.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { Widgets, eventually, installWidgetCrd, readWidget } from '../../support/widgets.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));

/** Our environment without KONDUCTOR_* settings (the test kubeconfig goes in as a flag, as a user would pass it). */


const HANDLERS = `import { on, type ChangeContext } from 'konductor';

export class PackagedWidgets {
  @on.create('test.konductor.dev/v1', 'widgets')
  async created({ patch }: ChangeContext): Promise<void> {
    patch.status.phase = 'Packaged';
  }
}
`;

/** Every process this file starts; each leads its own process group, so npm's own children go with it. */
const started: ChildProcess[] = [];
const scratch: string[] = [];

function running(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

function killGroup(child: ChildProcess): void {
  if (!running(child) || child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}

function tail(text: string, lines = 40): string {
  return text.split('\n').slice(-lines).join('\n');
}

/** Runs a command to completion; rejects with its output when it fails or outlives `timeoutMs`. */
function command(file: string, args: string[], cwd: string, timeoutMs: number): Promise<string> {
  const child = spawn(file, args, { cwd, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  started.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const shown = `${file} ${args.join(' ')}`;
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      killGroup(child);
      reject(new Error(`${shown} did not finish within ${timeoutMs} ms:\n${tail(output)}`));
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(output);
      else reject(new Error(`${shown} exited with ${code ?? signal}:\n${tail(output)}`));
    });
  });
}

/** Starts the installed package's `konductor` command in the consumer folder. */
function installedKonductor(cwd: string, args: string[]): Run {
  const run = spawnKonductor('node_modules/konductor/bin/konductor.mjs', args, { cwd, detached: true });
  started.push(run.child);
  return run;
}

/** Every file below `dir`, relative to it, with `/` separators. */
function filesBelow(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)).split('\\').join('/'));
}

function temporaryFolder(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  scratch.push(dir);
  return dir;
}

let kc: KubeConfig;
let kubeconfigPath: string;

beforeAll(async () => {
  kc = sharedKubeConfig();
  kubeconfigPath = process.env.KONDUCTOR_TEST_KUBECONFIG!;
  await installWidgetCrd(kc);
});

afterEach(() => {
  for (const child of started.splice(0)) killGroup(child);
});

afterAll(() => {
  for (const child of started.splice(0)) killGroup(child);
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('the packaged operator', () => {
  test('installed from its tarball with production dependencies only, runs TypeScript handlers against the cluster', async () => {
    // Pack (prepack builds dist/) and look at what would ship.
    const packed = temporaryFolder('konductor-pack-');
    await command('npm', ['pack', '--pack-destination', packed], root, 120_000);
    const tarballs = readdirSync(packed).filter((name) => name.endsWith('.tgz'));
    expect(tarballs).toHaveLength(1);
    const tarball = join(packed, tarballs[0]!);

    // Install it the way a user (or the image's `npm prune --omit=dev`) would: no dev dependencies.
    const consumer = temporaryFolder('konductor-consumer-');
    writeFileSync(join(consumer, 'package.json'), `${JSON.stringify({ name: 'consumer', private: true, type: 'module' })}\n`);
    await command('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', tarball], consumer, 180_000);

    const installed = join(consumer, 'node_modules', 'konductor');
    const shipped = filesBelow(installed);
    expect(shipped).toEqual(
      expect.arrayContaining(['package.json', 'README.md', 'bin/konductor.mjs', 'dist/cli/konductor.js', 'dist/framework/index.js', 'dist/framework/index.d.ts', 'dist/testing/index.js', 'scripts/provision.sh']),
    );
    expect(existsSync(join(installed, 'crds'))).toBe(true);
    expect(existsSync(join(installed, 'src'))).toBe(false);
    expect(shipped.filter((file) => file.startsWith('test/') || (/\.m?ts$/.test(file) && !/\.d\.m?ts$/.test(file)))).toEqual([]);
    for (const devOnly of ['typescript', 'jest', 'ts-jest', 'eslint', 'nock', '@types/jest']) {
      expect({ devOnly, installed: existsSync(join(consumer, 'node_modules', devOnly)) }).toEqual({ devOnly, installed: false });
    }

    // A handler file of the user's own, importing the installed package by name.
    writeFileSync(join(consumer, 'handlers.ts'), HANDLERS);
    const namespace = await uniqueNamespace(kc, 'pkg');
    const run = installedKonductor(consumer, [
      'run',
      './handlers.ts',
      '--kubeconfig',
      kubeconfigPath,
      '-n',
      namespace,
      '--lease-namespace',
      namespace,
      '--health-port',
      '0',
      '--log-format',
      'json',
    ]);

    await new Widgets(kc, namespace).create('w1');
    await eventually(
      async () => (await readWidget(namespace, 'w1'))?.status?.phase === 'Packaged' || !running(run.child),
      'the widget becomes Packaged',
      40_000,
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}\nstdout: ${tail(run.stdout())}\nstderr: ${run.stderr()}`);
    });
    expect({ running: running(run.child), stderr: run.stderr() }).toEqual({ running: true, stderr: '' });
    expect((await readWidget(namespace, 'w1'))?.status?.phase).toBe('Packaged');

    run.child.kill('SIGTERM');
    expect(await exitWithin(run, 15_000)).toBe(0);
    const lines = run.stdout().split('\n').filter((line) => line !== '');
    const messages = lines.map((line) => (JSON.parse(line) as { msg?: string }).msg);
    expect(messages).toEqual(expect.arrayContaining(['connected to the cluster', 'operator stopped']));
    expect(run.stderr()).toBe('');
  }, 240_000);
});
