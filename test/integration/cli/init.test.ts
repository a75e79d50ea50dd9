// `konductor init`, run from the source tree: the project it writes, checked with the repository's
// TypeScript against the framework's sources (so the templates cannot rot), its own test run, and
// its handlers run by `konductor run` against the shared control plane. The packed-tarball
// acceptance test (test/integration/runtime) does the same from a fresh `npm install`.
import { spawn, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiClient, ApiError, type KubeObject } from '../../../src/framework/index.js';
import { applyManifests, installCrds, readCrds, waitFor } from '../../../src/testing/index.js';
import {
  cleanEnv,
  exitWithin,
  killChildGroup,
  spawnKonductor,
  type Run,
} from '../../support/cli.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const GROUP = 'greet.example.org';

const started: ChildProcess[] = [];
let scratch: string;
let project: string;
let initRun: Run;

function konductor(args: string[], options: { cwd?: string } = {}): Run {
  const run = spawnKonductor(join(root, 'bin/konductor.mjs'), args, {
    cwd: options.cwd ?? root,
    detached: true,
  });
  started.push(run.child);
  return run;
}

/** Runs a command to completion; rejects with its output when it fails or outlives `timeoutMs`. */
function command(
  file: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<string> {
  const child = spawn(file, args, {
    cwd: options.cwd,
    env: { ...cleanEnv(), ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  started.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      killChildGroup(child);
      reject(
        new Error(
          `${file} ${args.join(' ')} did not finish within ${options.timeoutMs} ms:\n${output}`,
        ),
      );
    }, options.timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(output);
      else reject(new Error(`${file} ${args.join(' ')} exited with ${code ?? signal}:\n${output}`));
    });
  });
}

/**
 * Makes the generated project resolve `konductor` and `konductor/testing` to this repository's sources
 * (tsconfig paths, which both tsc and tsx follow) and its other packages from our node_modules.
 */
function linkToSources(dir: string): void {
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  const check = {
    extends: './tsconfig.json',
    compilerOptions: {
      paths: {
        konductor: [join(root, 'src/framework/index.ts')],
        'konductor/testing': [join(root, 'src/testing/index.ts')],
      },
      // The sources import @peculiar/x509, whose declarations need the DOM lib a Node project leaves
      // out; the published declarations never reference it (first-contact checks those as installed).
      skipLibCheck: true,
    },
  };
  writeFileSync(join(dir, 'tsconfig.check.json'), `${JSON.stringify(check, null, 2)}\n`);
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'konductor-init-'));
  project = join(scratch, 'greeter');
  initRun = konductor(['init', project, '--group', GROUP]);
  expect(await exitWithin(initRun, 30_000)).toBe(0);
});

afterEach(() => {
  for (const child of started.splice(0)) killChildGroup(child);
});

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

describe('konductor init', () => {
  test('writes the project and prints the commands to go on with', () => {
    for (const file of [
      'package.json',
      'tsconfig.json',
      'src/handlers.ts',
      'crds/greetings.yaml',
      'test/handlers.test.ts',
      'Dockerfile',
      'deploy/20-rbac.yaml',
      'deploy/30-deployment.yaml',
    ]) {
      expect({ file, exists: existsSync(join(project, file)) }).toEqual({ file, exists: true });
    }
    const pkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as {
      name: string;
      type: string;
      dependencies: Record<string, string>;
    };
    const version = (
      JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }
    ).version;
    expect(pkg).toMatchObject({
      name: 'greeter',
      type: 'module',
      dependencies: { konductor: `^${version}` },
    });
    expect(readFileSync(join(project, 'crds/greetings.yaml'), 'utf8')).toContain(
      `name: greetings.${GROUP}`,
    );
    expect(initRun.stdout()).toContain(`cd ${project} && npm install && npm test`);
    expect(initRun.stderr()).toBe('');
  });

  test('refuses a folder that is not empty, in one line, touching nothing', async () => {
    const occupied = join(scratch, 'occupied');
    mkdirSync(occupied);
    writeFileSync(join(occupied, 'notes.txt'), 'mine\n');
    const run = konductor(['init', occupied]);
    expect(await exitWithin(run, 30_000)).toBe(1);
    expect(run.stderr()).toBe(`konductor: ${occupied} is not empty: give a new or empty folder\n`);
    expect(readFileSync(join(occupied, 'notes.txt'), 'utf8')).toBe('mine\n');
    expect(existsSync(join(occupied, 'package.json'))).toBe(false);
  });

  test('the generated handlers and test type-check (strict) against the framework sources', async () => {
    const checked = join(scratch, 'typecheck');
    expect(await exitWithin(konductor(['init', checked, '--group', GROUP]), 30_000)).toBe(0);
    linkToSources(checked);
    await command(
      process.execPath,
      [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.check.json'],
      { cwd: checked, timeoutMs: 180_000 },
    );
  }, 200_000);

  test('the generated test passes: it starts its own control plane and runs the operator on it', async () => {
    const tested = join(scratch, 'tested');
    expect(await exitWithin(konductor(['init', tested]), 30_000)).toBe(0);
    linkToSources(tested);
    // What `npm test` runs there, with tsx told to use the paths to our sources.
    const output = await command(
      process.execPath,
      ['--import', 'tsx', '--test', 'test/handlers.test.ts'],
      {
        cwd: tested,
        env: { TSX_TSCONFIG_PATH: 'tsconfig.check.json' },
        timeoutMs: 180_000,
      },
    );
    expect(output).toMatch(/# pass 3\b/);
    expect(output).toMatch(/# fail 0\b/);
  }, 200_000);

  test('konductor run runs the generated handlers against a cluster', async () => {
    const kc: KubeConfig = sharedKubeConfig();
    await installCrds(kc, readCrds(join(project, 'crds')));
    const namespace = await uniqueNamespace(kc, 'init');
    const kubeconfigPath = process.env.KONDUCTOR_TEST_KUBECONFIG!;
    // From the repository root, whose tsconfig maps `konductor` to the sources for tsx.
    const run = konductor([
      'run',
      join(project, 'src/handlers.ts'),
      '--kubeconfig',
      kubeconfigPath,
      '-n',
      namespace,
      '--standalone',
      '--health-port',
      '0',
      '--log-format',
      'json',
    ]);
    await applyManifests(kc, [
      {
        apiVersion: `${GROUP}/v1`,
        kind: 'Greeting',
        metadata: { name: 'hello', namespace },
        spec: { name: 'world' },
      } as KubeObject,
    ]);

    const client = new ApiClient(kc);
    try {
      const path = `/apis/${GROUP}/v1/namespaces/${encodeURIComponent(namespace)}/greetings/hello`;
      const read = async (): Promise<
        (KubeObject & { status?: { message?: string } }) | undefined
      > =>
        client
          .request<KubeObject & { status?: { message?: string } }>('GET', path)
          .catch((error: unknown) => {
            if (error instanceof ApiError && error.status === 404) return undefined;
            throw error;
          });
      const greeted = await waitFor(
        async () => ((await read())?.status?.message === 'Hello, world!' ? true : undefined),
        {
          timeoutMs: 40_000,
          what: `the greeting to be handled (stderr: ${run.stderr()})`,
        },
      );
      expect(greeted).toBe(true);
    } finally {
      client.close();
    }
    run.child.kill('SIGTERM');
    expect(await exitWithin(run, 20_000)).toBe(0);
  }, 90_000);
});
