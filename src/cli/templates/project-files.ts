import type { ProjectSettings } from './settings.js';
import { EXAMPLE } from './settings.js';

/** package.json: an ES module package, with the scripts the README of the project names. */
export function packageJson(settings: ProjectSettings): string {
  const pkg = {
    name: settings.packageName,
    version: '0.1.0',
    private: true,
    // Handler files are ES modules: konductor is ESM, and standard decorators need no CommonJS shims.
    type: 'module',
    engines: { node: '>=20.19' },
    scripts: {
      // Once per machine (seconds when cached): the etcd and kube-apiserver the integration test runs on.
      pretest: 'bash node_modules/konductor/scripts/provision.sh',
      start: 'konductor run src/handlers.ts',
      dev: 'konductor dev src/handlers.ts',
      test: 'node --import tsx --test test/*.test.ts',
      typecheck: 'tsc --noEmit',
    },
    dependencies: { konductor: settings.konductor },
    devDependencies: { '@types/node': '^20.19.0', tsx: settings.tsx, typescript: '~5.9.3' },
  };
  return `${JSON.stringify(pkg, null, 2)}\n`;
}

/** tsconfig.json: strict, NodeNext, standard (TC39) decorators: no `experimentalDecorators`. */
export function tsconfigJson(): string {
  const config = {
    compilerOptions: {
      target: 'ES2022',
      lib: ['ES2023'],
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      strict: true,
      noUncheckedIndexedAccess: true,
      verbatimModuleSyntax: true,
      isolatedModules: true,
      noEmit: true,
      types: ['node'],
    },
    include: ['src', 'test'],
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

export const GITIGNORE = `node_modules/
dist/
`;

export const DOCKERIGNORE = `node_modules
.git
test
`;

/** The project's README: what is where, and the commands to use. */
export function readme(settings: ProjectSettings): string {
  return `# ${settings.packageName}

A Kubernetes operator written with [konductor](https://www.npmjs.com/package/konductor).

| file | what it is |
|---|---|
| \`src/handlers.ts\` | the handlers: a reconcile that keeps a ConfigMap, a create handler and a timer for ${EXAMPLE.kind} objects |
| \`crds/${EXAMPLE.plural}.yaml\` | the ${EXAMPLE.kind} CustomResourceDefinition (group \`${settings.group}\`) |
| \`test/handlers.test.ts\` | an integration test on a real kube-apiserver and etcd (\`konductor/testing\`) |
| \`Dockerfile\`, \`deploy/\` | the image, and its ServiceAccount, RBAC and Deployment |

## Commands

\`\`\`sh
npm install
npm test                 # provisions etcd and kube-apiserver once (pretest), then starts a test control plane
npm run typecheck
npm run dev              # runs the handlers against your current kubeconfig, restarting on every change
npm start                # runs them without restarts (konductor run src/handlers.ts)
\`\`\`

\`npm run dev\` and \`npm start\` need the CRD in the cluster: \`kubectl apply -f crds/\`. Then try
\`kubectl create -f - <<<'{"apiVersion":"${settings.group}/${EXAMPLE.version}","kind":"${EXAMPLE.kind}","metadata":{"name":"hello"},"spec":{"name":"world"}}'\`
and \`kubectl get ${EXAMPLE.plural} hello -o yaml\`.

## Deploy

\`\`\`sh
npm install                                  # the Dockerfile installs from package-lock.json
docker build -t ${settings.appName}:0.1.0 .
kubectl apply -f crds/ -f deploy/
\`\`\`

\`deploy/\` grants the operator only what the example's handlers need: list, watch and patch
${EXAMPLE.plural} (and their status), post Events, and hold its leader-election Lease. Add rules there
when your handlers touch other resources.
`;
}
