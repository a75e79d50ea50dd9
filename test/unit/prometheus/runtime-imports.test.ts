import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const sourceDir = fileURLToPath(new URL('../../../src/handlers/prometheus/', import.meta.url));
const sources = readdirSync(sourceDir)
  .filter((f) => f.endsWith('.ts'))
  .sort();

/**
 * The modules a file loads when it runs: its TypeScript as compiled with the project's
 * `verbatimModuleSyntax`, which drops `import type` and keeps every other import (even
 * `import { type X }`, which still loads the module).
 */
function runtimeImports(file: string): string[] {
  const { outputText } = ts.transpileModule(readFileSync(`${sourceDir}${file}`, 'utf8'), {
    compilerOptions: {
      module: ts.ModuleKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      verbatimModuleSyntax: true,
    },
    fileName: file,
  });
  return ts.preProcessFile(outputText, true, true).importedFiles.map((i) => i.fileName);
}

describe('the Prometheus handlers at run time', () => {
  // client-node's generated API costs ~70 MB of memory once loaded; the framework avoids it too.
  it.each(sources)('%s does not load @kubernetes/client-node', (file) => {
    expect(runtimeImports(file)).not.toContain('@kubernetes/client-node');
  });

  it('the check sees runtime imports and ignores type-only ones', () => {
    const value = ts.transpileModule(
      "import { dumpYaml } from '@kubernetes/client-node';\nexport const f = dumpYaml;",
      {
        compilerOptions: { module: ts.ModuleKind.NodeNext, verbatimModuleSyntax: true },
      },
    ).outputText;
    const typeOnly = ts.transpileModule(
      "import type { KubeConfig } from '@kubernetes/client-node';\nexport type K = KubeConfig;",
      {
        compilerOptions: { module: ts.ModuleKind.NodeNext, verbatimModuleSyntax: true },
      },
    ).outputText;
    expect(ts.preProcessFile(value, true, true).importedFiles.map((i) => i.fileName)).toEqual([
      '@kubernetes/client-node',
    ]);
    expect(ts.preProcessFile(typeOnly, true, true).importedFiles).toEqual([]);
  });
});
