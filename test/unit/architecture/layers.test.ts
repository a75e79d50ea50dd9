import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

// ESLint 8 ships no types; these are the calls used here.
interface LintMessage {
  ruleId: string | null;
  message: string;
}
interface ESLintApi {
  lintText(
    code: string,
    options: { filePath: string },
  ): Promise<Array<{ messages: LintMessage[] }>>;
  calculateConfigForFile(filePath: string): Promise<{ rules?: Record<string, unknown> }>;
}
const { ESLint } = createRequire(import.meta.url)('eslint') as {
  ESLint: new (options: { cwd: string }) => ESLintApi;
};

// The layer rules live in .eslintrc.cjs and are explained in ARCHITECTURE.md; these specs show that
// `npm run lint` enforces them and that the framework's folders form no import cycle.
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const framework = join(root, 'src/framework');
const eslint = new ESLint({ cwd: root });

const frameworkFolders = (): string[] =>
  readdirSync(framework, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

async function restrictedImportMessages(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(root, filePath) });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

/** Folder → folders it imports, from the relative imports of its files. */
function folderGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of sourceFiles(framework)) {
    const from = relative(framework, file).split('/')[0]!;
    if (!file.slice(framework.length + 1).includes('/')) continue; // index.ts sits above every layer
    const edges = graph.get(from) ?? new Set<string>();
    graph.set(from, edges);
    for (const match of readFileSync(file, 'utf8').matchAll(/from '(\.{1,2}\/[^']+)'/g)) {
      const to = relative(framework, resolve(dirname(file), match[1]!)).split('/')[0]!;
      if (to !== from && !to.startsWith('..')) edges.add(to);
    }
  }
  return graph;
}

describe('framework layers', () => {
  it('fails lint when a lower layer imports a higher one', async () => {
    const messages = await restrictedImportMessages(
      'src/framework/api/wrong-import.ts',
      "import type { Operator } from '../runtime/operator.js';\nexport type Wrong = Operator;\n",
    );
    expect(messages).toEqual([
      expect.stringContaining('src/framework/api may import only: objects, observability, clock'),
    ]);
  });

  it('lets a layer import the layers below it', async () => {
    const messages = await restrictedImportMessages(
      'src/framework/watching/allowed-import.ts',
      "import type { Resource } from '../api/resource.js';\nexport type Allowed = Resource;\n",
    );
    expect(messages).toEqual([]);
  });

  it('fails lint when the framework imports the CLI, the testing kit or the bundled operators', async () => {
    const messages = await restrictedImportMessages(
      'src/framework/runtime/wrong-import.ts',
      "import type { ControlPlane } from '../../testing/control-plane.js';\nexport type Wrong = ControlPlane;\n",
    );
    expect(messages).toEqual([
      expect.stringContaining('knows nothing of the CLI, the testing kit'),
    ]);
  });

  it('fails lint when a bundled operator imports framework internals instead of the public API', async () => {
    const messages = await restrictedImportMessages(
      'src/handlers/etcd/wrong-import.ts',
      "import type { Reactor } from '../../framework/reactor/reactor.js';\nexport type Wrong = Reactor;\n",
    );
    expect(messages).toEqual([expect.stringContaining('import the public API only')]);
  });

  it('fails lint when packed code imports the repository test support', async () => {
    const importer =
      "import { EtcdPodRunner } from '../../test/support/simulated-kubelet/index.js';\nexport const Wrong = EtcdPodRunner;\n";
    for (const filePath of [
      'src/cli/wrong-import.ts',
      'src/testing/wrong-import.ts',
      'src/handlers/etcd/wrong-import.ts',
      'src/framework/runtime/wrong-import.ts',
    ]) {
      expect(await restrictedImportMessages(filePath, importer)).not.toEqual([]);
    }
  });

  it('lets the repository-only demo (npm start) use the simulated kubelet of the test support', async () => {
    const messages = await restrictedImportMessages(
      'src/cli/start.ts',
      "import { EtcdPodRunner } from '../../test/support/simulated-kubelet/index.js';\nexport const Allowed = EtcdPodRunner;\n",
    );
    expect(messages).toEqual([]);
  });

  it('gives every framework folder a layer rule', async () => {
    const unruled: string[] = [];
    for (const folder of frameworkFolders()) {
      const config = await eslint.calculateConfigForFile(join(framework, folder, 'any.ts'));
      if (config.rules?.['no-restricted-imports'] === undefined) unruled.push(folder);
    }
    expect(unruled).toEqual([]);
  });

  it('has no import cycle between framework folders', () => {
    const graph = folderGraph();
    const cycles: string[] = [];
    const visit = (folder: string, path: string[]): void => {
      if (path.includes(folder)) {
        cycles.push([...path.slice(path.indexOf(folder)), folder].join(' → '));
        return;
      }
      for (const next of graph.get(folder) ?? []) visit(next, [...path, folder]);
    };
    for (const folder of graph.keys()) visit(folder, []);
    expect(cycles).toEqual([]);
  });

  it('keeps every framework file under 400 lines, one concept per file', () => {
    const long = sourceFiles(framework)
      .map((file) => ({
        file: relative(root, file),
        lines: readFileSync(file, 'utf8').split('\n').length,
      }))
      .filter(({ lines }) => lines > 400);
    expect(long).toEqual([]);
  });

  it('names each framework file once: two folders never hold a file of the same name', () => {
    const byName = new Map<string, string[]>();
    for (const file of sourceFiles(framework)) {
      const name = basename(file);
      if (name !== 'index.ts')
        byName.set(name, [...(byName.get(name) ?? []), relative(root, file)]);
    }
    expect([...byName.values()].filter((files) => files.length > 1)).toEqual([]);
  });

  it('leaves no hand-built API path in the bundled operators: they read and write through client.resource', () => {
    const handlers = join(root, 'src/handlers');
    const paths = sourceFiles(handlers).flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .map((line, at) => ({ at: `${relative(root, file)}:${at + 1}`, line }))
        .filter(({ line }) => /['`]\/apis?\//.test(line))
        .map(({ at }) => at),
    );
    expect(paths).toEqual([]);
  });
});
