// First contact, as a new user has it: the packed package (`npm pack`, whose `prepack` builds) installed
// into an empty ES-module project, then exactly what the README and the documentation tell them to type:
// `npx konductor`, `./node_modules/.bin/konductor`, `konductor run`, the setup of docs/getting-started/
// (its `npm install` lines, its package.json and tsconfig) with every TypeScript block of the README and
// of docs/ type-checked and its examples run, and the README's `konductor init` → `npm install` →
// `npm test`, `types` and `manifests` in the new project.
// Nothing here comes from the source tree but the pages: only the tarball, the npm registry and the shared cluster.
import { spawn, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { killGroup } from '../../../src/testing/managed-process.js';
import { cleanEnv, exitWithin, type Run } from '../../support/cli.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { Widgets, installWidgetCrd, readWidget } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** npm as the README's commands run it here: the registry is reachable, its cache warm. */
const NPM_FLAGS = ['--no-audit', '--no-fund', '--prefer-offline'];

/** What a bundled operator needs and the framework does not: none of it may reach a user's project. */
const OPERATOR_ONLY = ['@aws-sdk/client-s3', 'etcd3', '@grpc/grpc-js', 'cockatiel', 're2js'];
/** Our development tools: none of them is a dependency of the package. */
const DEV_ONLY = ['jest', 'ts-jest', 'eslint', 'nock', '@types/jest', 's3rver'];

const HANDLERS = `import { on, type ChangeContext } from 'konductor';

export class PackagedWidgets {
  @on.create('test.konductor.dev/v1', 'widgets')
  async created({ patch }: ChangeContext): Promise<void> {
    patch.status.phase = 'Packaged';
  }
}
`;

/**
 * The environment of every command: ours without KONDUCTOR_* settings (a test gives the kubeconfig as
 * a flag, as a user would) and without npm's, except where the test control plane's binaries are, which a user's
 * machine has from provisioning.
 */
function userEnv(): NodeJS.ProcessEnv {
  // Also without the npm_* variables `npm test` hands down to jest: a user's shell has none.
  const env = Object.fromEntries(
    Object.entries(cleanEnv()).filter(([key]) => !key.toLowerCase().startsWith('npm_')),
  );
  for (const key of ['KONDUCTOR_ETCD', 'KONDUCTOR_KUBE_APISERVER', 'KONDUCTOR_CACHE_DIR']) {
    if (process.env[key]) env[key] = process.env[key];
  }
  return env;
}

/** Every process this file starts; each leads its own process group, so npm's own children go with it. */
const started: ChildProcess[] = [];
const scratch: string[] = [];

function running(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Kills the child's whole process group: npx may be gone while the konductor it started still runs. */
function killNpxGroup(child: ChildProcess): void {
  if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL');
}

/** What a command printed on stderr, without npm's own warnings (this machine's npm configuration has some). */
function ownStderr(run: Run): string {
  return run
    .stderr()
    .split('\n')
    .filter((line) => !line.startsWith('npm warn '))
    .join('\n');
}

function tail(text: string, lines = 40): string {
  return text.split('\n').slice(-lines).join('\n');
}

/** Starts a command in its own process group and collects what it prints. */
function start(file: string, args: readonly string[], cwd: string): Run {
  const child = spawn(file, args, {
    cwd,
    env: userEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  started.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => {
    child.once('error', () => resolve('spawn error'));
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

/** Runs a command to completion and returns its stdout; rejects with its output when it fails or outlives `timeoutMs`. */
async function command(
  file: string,
  args: readonly string[],
  cwd: string,
  timeoutMs: number,
): Promise<string> {
  const run = start(file, args, cwd);
  const shown = `${file} ${args.join(' ')} (in ${cwd})`;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>(
    (resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)),
  );
  const outcome = await Promise.race([run.exited, timeout]);
  clearTimeout(timer);
  if (outcome === 'timeout') {
    killNpxGroup(run.child);
    throw new Error(
      `${shown} did not finish within ${timeoutMs} ms:\n${tail(run.stdout())}\n${tail(run.stderr())}`,
    );
  }
  if (outcome !== 0)
    throw new Error(
      `${shown} exited with ${outcome}:\n${tail(run.stdout())}\n${tail(run.stderr())}`,
    );
  return run.stdout();
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

/** A fenced code block; `path` is the file its first line names (`// src/x.ts`, `# crds/x.yaml`). */
interface ReadmeBlock {
  lang: string;
  body: string;
  path?: string;
  /** The line of the markdown page its body starts on. */
  line: number;
}

function readmeBlocks(markdown: string): ReadmeBlock[] {
  return [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((match) => {
    const [, lang = '', body = ''] = match;
    const line = markdown.slice(0, match.index).split('\n').length + 1;
    const named = /^(?:\/\/|#) ([\w./-]+\.(?:ts|ya?ml))\n/.exec(body);
    return named ? { lang, body, path: named[1]!, line } : { lang, body, line };
  });
}

/** A page of the documentation: README.md or a markdown file below docs/, named from the repository root. */
interface Page {
  path: string;
  markdown: string;
}

const pages: Page[] = [
  { path: 'README.md', markdown: readme },
  ...filesBelow(join(root, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .sort()
    .map((file) => ({
      path: `docs/${file}`,
      markdown: readFileSync(join(root, 'docs', file), 'utf8'),
    })),
];

/**
 * The pages whose blocks make up the one project a reader builds, in the consumer project's own
 * folders: the README and getting started. Every other page's blocks land in a folder of their own
 * (`src/docs/<page>/`), so pages never share or clash over a file name.
 */
function isProjectPage(page: string): boolean {
  return page === 'README.md' || page.startsWith('docs/getting-started/');
}

/** A block of a page and where it lands in the project: `where` names it in failure messages. */
interface PageBlock extends ReadmeBlock {
  page: string;
  landing?: string;
  where: string;
}

/** Every block of every page; TypeScript and named blocks get the path they land at in the project. */
function pageBlocks(): PageBlock[] {
  return pages.flatMap(({ path: page, markdown }) => {
    const folder = `src/docs/${page
      .replace(/^docs\//, '')
      .replace(/\.md$/, '')
      .split('/')
      .join('-')}`;
    let unnamed = 0;
    return readmeBlocks(markdown).map((block, index) => {
      const where = `${page}, block ${index + 1} at line ${block.line}`;
      if (block.lang !== 'ts' && !block.path) return { ...block, page, where };
      const own = block.path ?? `example-${++unnamed}.ts`;
      const landing = isProjectPage(page) && block.path ? block.path : `${folder}/${own}`;
      return { ...block, page, where, landing };
    });
  });
}

/** The blocks of the project pages. */
function projectBlocks(): PageBlock[] {
  return pageBlocks().filter((block) => isProjectPage(block.page));
}

/** The one JSON block of the project pages holding `needle` (its package.json or its tsconfig). */
function readmeJson(needle: string): Record<string, unknown> {
  const blocks = projectBlocks().filter(
    (block) => block.lang === 'json' && block.body.includes(needle),
  );
  expect(blocks.map((block) => block.where)).toHaveLength(1);
  return JSON.parse(blocks[0]!.body) as Record<string, unknown>;
}

/** The project pages' commands in ```sh blocks that start with `prefix`, as argument lists (comments dropped). */
function readmeCommands(prefix: string): string[][] {
  return projectBlocks()
    .filter((block) => block.lang === 'sh')
    .flatMap((block) => block.body.split('\n'))
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line.startsWith(prefix))
    .map((line) => line.split(/\s+/));
}

/** A block without import or export would be a global script, whose names clash with other blocks'. */
function asModule(body: string): string {
  return /^\s*(import|export)\b/m.test(body) ? body : `${body}\nexport {};\n`;
}

let kc: KubeConfig;
let kubeconfigPath: string;
let tarball: string;
/** A `"type": "module"` project that installed the tarball and nothing else; then what the README adds. */
let consumer: string;

beforeAll(async () => {
  kc = sharedKubeConfig();
  kubeconfigPath = process.env.KONDUCTOR_TEST_KUBECONFIG!;
  await installWidgetCrd(kc);

  const packed = temporaryFolder('konductor-pack-');
  await command('npm', ['pack', '--pack-destination', packed], root, 180_000);
  const tarballs = readdirSync(packed).filter((name) => name.endsWith('.tgz'));
  expect(tarballs).toHaveLength(1);
  tarball = join(packed, tarballs[0]!);

  consumer = temporaryFolder('konductor-consumer-');
  writeFileSync(
    join(consumer, 'package.json'),
    `${JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2)}\n`,
  );
  await command('npm', ['install', ...NPM_FLAGS, tarball], consumer, 240_000);
}, 480_000);

afterEach(() => {
  for (const child of started.splice(0)) killNpxGroup(child);
});

afterAll(() => {
  for (const child of started.splice(0)) killNpxGroup(child);
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('installing the packed package into an empty project', () => {
  test('brings the framework, its command, its testing kit and the provisioning script, and not the bundled operators or their dependencies', () => {
    const installed = join(consumer, 'node_modules', 'konductor');
    const shipped = filesBelow(installed);
    expect(shipped).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'bin/konductor.mjs',
        'dist/cli/konductor.js',
        'dist/framework/index.js',
        'dist/framework/index.d.ts',
        'dist/testing/index.js',
        'dist/testing/index.d.ts',
        'scripts/provision.sh',
      ]),
    );
    expect(
      shipped.filter(
        (file) =>
          file.startsWith('src/') ||
          file.startsWith('test/') ||
          (/\.m?ts$/.test(file) && !/\.d\.m?ts$/.test(file)),
      ),
    ).toEqual([]);
    // No operator code, nor the etcd operator's test support.
    expect(shipped.filter((file) => file.startsWith('dist/handlers/'))).toEqual([]);

    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    const dependencies = Object.keys(manifest.dependencies ?? {});
    expect(
      dependencies.filter((name) => OPERATOR_ONLY.includes(name) || DEV_ONLY.includes(name)),
    ).toEqual([]);
    for (const unwanted of [...OPERATOR_ONLY, ...DEV_ONLY]) {
      expect({ unwanted, installed: existsSync(join(consumer, 'node_modules', unwanted)) }).toEqual(
        { unwanted, installed: false },
      );
    }
  });

  test('`npx konductor --help` and `./node_modules/.bin/konductor --help` print the usage', async () => {
    for (const [file, args] of [
      ['npx', ['konductor', '--help']],
      ['./node_modules/.bin/konductor', ['--help']],
    ] as const) {
      const usage = await command(file, args, consumer, 60_000);
      expect({ file, usage }).toEqual({ file, usage: expect.stringContaining('konductor run') });
      expect({ file, usage }).toEqual({ file, usage: expect.stringContaining('konductor init') });
    }
  }, 120_000);

  test('`npx konductor run handlers.ts` runs a TypeScript handler file of the project against the cluster', async () => {
    writeFileSync(join(consumer, 'handlers.ts'), HANDLERS);
    const namespace = await uniqueNamespace(kc, 'pkg');
    const args = [
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
    ];
    const run = start('npx', ['konductor', 'run', 'handlers.ts', ...args], consumer);

    await new Widgets(kc, namespace).create('w1');
    await waitFor(
      async () =>
        (await readWidget(namespace, 'w1'))?.status?.phase === 'Packaged' || !running(run.child),
      {
        what: 'the widget becomes Packaged',
        timeoutMs: 40_000,
      },
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}\nstdout: ${tail(run.stdout())}\nstderr: ${run.stderr()}`);
    });
    expect({ running: running(run.child), stderr: ownStderr(run) }).toEqual({
      running: true,
      stderr: '',
    });
    expect((await readWidget(namespace, 'w1'))?.status?.phase).toBe('Packaged');

    // As Ctrl-C in a terminal, the signal reaches every process of the job, konductor included: it
    // drains, says so and exits.
    process.kill(-run.child.pid!, 'SIGTERM');
    await exitWithin(run, 15_000);
    await waitFor(async () => run.stdout().includes('"operator stopped"'), {
      what: 'konductor says it stopped',
      timeoutMs: 15_000,
    }).catch((error: unknown) => {
      throw new Error(`${String(error)}\nstdout: ${tail(run.stdout())}\nstderr: ${run.stderr()}`);
    });
    const messages = run
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => (JSON.parse(line) as { msg?: string }).msg);
    expect(messages).toEqual(
      expect.arrayContaining(['connected to the cluster', 'operator stopped']),
    );
    expect(ownStderr(run)).toBe('');
  }, 120_000);
});

describe('the documented project, set up as docs/getting-started says, with every block of the README and docs/', () => {
  let project: string;
  /** Where each written file came from, for failure messages. */
  const origins = new Map<string, PageBlock>();

  beforeAll(async () => {
    // The same project, now set up as getting started says.
    project = consumer;
    const manifest = {
      ...(JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as object),
      ...readmeJson('"type"'),
    };
    writeFileSync(join(project, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    writeFileSync(
      join(project, 'tsconfig.json'),
      `${JSON.stringify(readmeJson('compilerOptions'), null, 2)}\n`,
    );
    const installs = readmeCommands('npm install');
    expect(installs.map((install) => install.join(' '))).toContain('npm install konductor');
    for (const [npm, ...args] of installs) {
      // `konductor` is this tarball, not whatever the registry has under the name.
      await command(
        npm!,
        [...args.map((arg) => (arg === 'konductor' ? tarball : arg)), ...NPM_FLAGS],
        project,
        240_000,
      );
    }
    const clashes: string[] = [];
    for (const block of pageBlocks()) {
      if (!block.landing) continue;
      const earlier = origins.get(block.landing);
      // A page may show a file another project page shows too, but never two versions of it.
      if (earlier) {
        if (earlier.body !== block.body)
          clashes.push(
            `${block.where} and ${earlier.where} both write ${block.landing}, differently`,
          );
        continue;
      }
      origins.set(block.landing, block);
      mkdirSync(join(project, dirname(block.landing)), { recursive: true });
      writeFileSync(
        join(project, block.landing),
        block.lang === 'ts' && !block.path ? asModule(block.body) : block.body,
      );
    }
    expect(clashes).toEqual([]);
  }, 600_000);

  test('every TypeScript block of the README and of docs/ type-checks against the installed package (strict, library types checked, luxon types included)', async () => {
    const tsconfig = readmeJson('compilerOptions') as {
      compilerOptions: Record<string, unknown>;
      include: string[];
    };
    expect(tsconfig.compilerOptions).toMatchObject({ strict: true });
    expect(tsconfig.compilerOptions).not.toHaveProperty('skipLibCheck');
    expect(tsconfig.compilerOptions).not.toHaveProperty('experimentalDecorators');
    const blocks = pageBlocks().filter((block) => block.lang === 'ts');
    expect(blocks.filter((block) => block.page === 'README.md').length).toBeGreaterThanOrEqual(1);
    expect(blocks.filter((block) => block.page.startsWith('docs/')).length).toBeGreaterThanOrEqual(
      20,
    );
    // Every block lands in a folder the documented tsconfig includes.
    const outside = blocks
      .filter((block) => !tsconfig.include.includes(block.landing!.split('/')[0]!))
      .map((block) => `${block.where}: ${block.landing}`);
    expect(outside).toEqual([]);

    // Were luxon's types missing from the install, DurationInput would silently become `any`: the
    // assignment below would compile and tsc would report the directive as unused.
    const durationCheck = `import type { DurationInput } from 'konductor';
// @ts-expect-error a boolean is no duration
export const wrong: DurationInput = true;
export const right: DurationInput[] = ['PT5S', 5];
`;
    writeFileSync(join(project, 'src', 'published-types.ts'), durationCheck);
    try {
      const run = start('npx', ['tsc', '-p', '.'], project);
      let timer: NodeJS.Timeout | undefined;
      const exited = await Promise.race([
        run.exited,
        new Promise<'timeout'>(
          (resolve) => (timer = setTimeout(() => resolve('timeout'), 180_000)),
        ),
      ]);
      clearTimeout(timer);
      // Each error names the page, line and block it came from; the line is the page's, not the file's.
      const errors = run
        .stdout()
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => {
          const at = /^([^(]+)\((\d+),(\d+)\): (.*)$/.exec(line);
          const origin = at ? origins.get(at[1]!) : undefined;
          return origin && at
            ? `${origin.page}:${origin.line + Number(at[2]) - 1} (${origin.where}; ${at[1]}:${at[2]}:${at[3]}): ${at[4]}`
            : line;
        });
      expect({ exited, errors, stderr: run.stderr() }).toEqual({
        exited: 0,
        errors: [],
        stderr: '',
      });
    } finally {
      rmSync(join(project, 'src', 'published-types.ts'));
    }
  }, 300_000);

  test("getting started's test recipe passes with `npm test` (node --import tsx --test)", async () => {
    expect(existsSync(join(project, 'crds', 'widgets.yaml'))).toBe(true);
    expect(existsSync(join(project, 'test', 'widgets.test.ts'))).toBe(true);
    const output = await command('npm', ['test'], project, 180_000);
    expect(output).toMatch(/# pass [1-9]/);
    expect(output).toMatch(/# fail 0/);
  }, 240_000);

  test("the test control plane's example (docs/testing/control-plane.md) runs as written", async () => {
    const examples = pageBlocks().filter(
      (block) =>
        block.page === 'docs/testing/control-plane.md' &&
        block.lang === 'ts' &&
        !block.path &&
        block.body.includes('TestControlPlane.start()'),
    );
    expect(examples.map((block) => block.where)).toHaveLength(1);
    const output = await command(
      'node',
      ['--import', 'tsx', examples[0]!.landing!],
      project,
      120_000,
    );
    expect(output).toContain('system:serviceaccount:ops:operator');
  }, 180_000);
});

describe("the README's quick start: a project made by `npx konductor init`", () => {
  let app: string;

  test('`npx konductor init`, `npm install`, provisioning from the installed package and `npm test` pass as the README gives them (at most four lines)', async () => {
    const quickStart = readmeBlocks(readme).find(
      (block) => block.lang === 'sh' && block.body.includes('konductor init'),
    );
    expect(quickStart).toBeDefined();
    const lines = quickStart!.body
      .split('\n')
      .map((line) => line.replace(/\s+#.*$/, '').trim())
      .filter((line) => line !== '');
    expect(lines.length).toBeLessThanOrEqual(4);
    let cwd = consumer;
    for (const step of lines.flatMap((line) => line.split('&&').map((part) => part.trim()))) {
      const [file, ...args] = step.split(/\s+/);
      if (file === 'cd') {
        cwd = join(cwd, args[0]!);
        continue;
      }
      // This tarball, not whatever the registry has under the name.
      if (file === 'npx' && args[0] === 'konductor' && args[1] === 'init')
        args.push('--konductor', `file:${tarball}`);
      if (file === 'npm' && args[0] === 'install') args.push(...NPM_FLAGS);
      const output = await command(file!, args, cwd, 300_000);
      if (file === 'npm' && args[0] === 'test') expect(output).not.toMatch(/# fail [1-9]/);
    }
    app = cwd;
    expect(app).not.toBe(consumer);
    expect(existsSync(join(app, 'node_modules', 'konductor', 'package.json'))).toBe(true);
  }, 900_000);

  test('`npx konductor types crds/` prints TypeScript interfaces for its CRD, and they compile in the project', async () => {
    expect(
      filesBelow(join(app, 'crds')).filter((file) => /\.ya?ml$/.test(file)).length,
    ).toBeGreaterThan(0);
    const types = await command('npx', ['konductor', 'types', 'crds/'], app, 60_000);
    expect(types).toMatch(/export interface \w+/);
    writeFileSync(join(app, 'src', 'crd-types.ts'), types);
    expect(await command('npx', ['tsc', '--noEmit', '-p', '.'], app, 120_000)).toBe('');
  }, 240_000);

  test('`npx konductor manifests` prints the ServiceAccount, RBAC and Deployment for its handlers', async () => {
    const handlers = filesBelow(join(app, 'src'))
      .filter((file) => file.endsWith('.ts') && file !== 'crd-types.ts')
      .map((file) => `src/${file}`);
    expect(handlers.length).toBeGreaterThan(0);
    const yaml = await command('npx', ['konductor', 'manifests', ...handlers], app, 60_000);
    for (const kind of [
      'ServiceAccount',
      '(Cluster)?Role',
      '(Cluster)?RoleBinding',
      'Deployment',
    ]) {
      expect({ kind, yaml }).toEqual({
        kind,
        yaml: expect.stringMatching(new RegExp(`^kind: ${kind}$`, 'm')),
      });
    }
  }, 120_000);
});
