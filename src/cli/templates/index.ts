// The files of a new project (`konductor init`), as TypeScript string templates: they compile into
// dist/ with the CLI, so the package ships nothing extra for them.
import { crdFile, handlersFile, handlersTestFile } from './example-operator.js';
import {
  deploymentManifest,
  dockerfile,
  namespaceManifest,
  rbacManifest,
  serviceAccountManifest,
} from './deployment.js';
import { DOCKERIGNORE, GITIGNORE, packageJson, readme, tsconfigJson } from './project-files.js';
import { EXAMPLE, type ProjectSettings } from './settings.js';

export { EXAMPLE, type ProjectSettings } from './settings.js';

/** Every file of a new project: path (with `/`, relative to the project folder) → contents. */
export function projectFiles(settings: ProjectSettings): Map<string, string> {
  return new Map([
    ['package.json', packageJson(settings)],
    ['tsconfig.json', tsconfigJson()],
    ['.gitignore', GITIGNORE],
    ['.dockerignore', DOCKERIGNORE],
    ['README.md', readme(settings)],
    ['src/handlers.ts', handlersFile(settings)],
    [`crds/${EXAMPLE.plural}.yaml`, crdFile(settings)],
    ['test/handlers.test.ts', handlersTestFile(settings)],
    ['Dockerfile', dockerfile(settings)],
    ['deploy/00-namespace.yaml', namespaceManifest(settings)],
    ['deploy/10-serviceaccount.yaml', serviceAccountManifest(settings)],
    ['deploy/20-rbac.yaml', rbacManifest(settings)],
    ['deploy/30-deployment.yaml', deploymentManifest(settings)],
  ]);
}
