/* ESLint 8 reads this legacy config; typescript-eslint 8 supplies the TypeScript rules. */

/*
 * The framework's layers, lowest first. Each folder of src/framework may import only the folders
 * listed for it (and its own files); ARCHITECTURE.md explains each one. A wrong import fails
 * `npm run lint` (test/unit/architecture/layers.test.ts shows it).
 */
const layers = {
  clock: [],
  observability: [],
  objects: [],
  api: ['objects', 'observability', 'clock'],
  watching: ['api', 'objects', 'observability', 'clock'],
  state: ['api', 'objects', 'observability', 'clock'],
  posting: ['api', 'objects', 'observability', 'clock'],
  reactor: ['watching', 'objects', 'observability', 'clock'],
  intents: ['api', 'state', 'posting', 'objects', 'observability', 'clock'],
  registry: ['intents', 'objects', 'observability', 'clock'],
  decorators: ['registry', 'intents', 'objects', 'clock'],
  processing: [
    'intents',
    'reactor',
    'state',
    'posting',
    'watching',
    'api',
    'objects',
    'observability',
    'clock',
  ],
  engines: [
    'processing',
    'intents',
    'state',
    'posting',
    'watching',
    'api',
    'objects',
    'observability',
    'clock',
  ],
  sharding: ['watching', 'api', 'objects', 'observability', 'clock'],
  admission: [
    'registry',
    'intents',
    'posting',
    'state',
    'api',
    'objects',
    'observability',
    'clock',
  ],
  runtime: [
    'sharding',
    'admission',
    'engines',
    'processing',
    'registry',
    'intents',
    'reactor',
    'state',
    'posting',
    'watching',
    'api',
    'objects',
    'observability',
    'clock',
  ],
};

/** The one module that loads the OpenTelemetry SDK, and only when tracing is on (`loadTracing`). */
const OTEL_SDK_MODULE = 'src/framework/observability/otel-tracing.ts';
const OTEL_SDK = {
  // A static import of otel-tracing.js would load the SDK too; loadTracing's dynamic import() is not checked.
  group: ['@opentelemetry/*', '!@opentelemetry/api', '**/otel-tracing.js', './otel-tracing.js'],
  message: `The OpenTelemetry SDK loads only with tracing on: import it in ${OTEL_SDK_MODULE} alone (the API, @opentelemetry/api, is fine).`,
};

/** One ESLint override per folder: importing a folder not in its list is an error that names the rule. */
function layerOverrides() {
  const folders = Object.keys(layers);
  return folders.flatMap((folder) => {
    const forbidden = folders.filter(
      (other) => other !== folder && !layers[folder].includes(other),
    );
    const override = (sdk) => ({
      rules: {
        'no-restricted-imports': [
          'error',
          {
            patterns: [
              ...(sdk ? [] : [OTEL_SDK]),
              ...forbidden.map((other) => ({
                group: [`**/framework/${other}/**`, `../${other}/**`, `../../${other}/**`],
                message: `src/framework/${folder} may import only: ${layers[folder].join(', ') || 'nothing else in the framework'} (see ARCHITECTURE.md).`,
              })),
              {
                group: [
                  '**/handlers/**',
                  '**/cli/**',
                  '**/testing/**',
                  '**/test/**',
                  '../index.js',
                  '../../index.js',
                ],
                message:
                  "The framework knows nothing of the CLI, the testing kit, the bundled operators, the repository's test support or its own public index.",
              },
            ],
          },
        ],
      },
    });
    const files = [`src/framework/${folder}/**/*.ts`];
    return folder === 'observability'
      ? [
          { files, excludedFiles: [OTEL_SDK_MODULE], ...override(false) },
          { files: [OTEL_SDK_MODULE], ...override(true) },
        ]
      : [{ files, ...override(false) }];
  });
}

module.exports = {
  root: true,
  env: { node: true, es2022: true },
  parser: '@typescript-eslint/parser',
  parserOptions: { ecmaVersion: 2022, sourceType: 'module' },
  plugins: ['@typescript-eslint'],
  extends: ['eslint:recommended', 'plugin:@typescript-eslint/recommended'],
  ignorePatterns: ['dist/', 'node_modules/', 'coverage/'],
  rules: {
    '@typescript-eslint/no-explicit-any': 'error',
    '@typescript-eslint/no-unused-vars': [
      'error',
      { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
    ],
    '@typescript-eslint/consistent-type-imports': 'error',
    'no-console': 'off',
    eqeqeq: ['error', 'always', { null: 'ignore' }],
  },
  overrides: [
    {
      files: ['test/**/*.ts', 'bench/**/*.ts'],
      rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
    },
    // Framework layers (.eslint-layers.cjs, ARCHITECTURE.md).
    ...layerOverrides(),
    {
      // The bundled operators are written against the public API only, as a user's would be.
      files: ['src/handlers/**/*.ts'],
      rules: {
        'no-restricted-imports': [
          'error',
          {
            patterns: [
              {
                group: ['**/framework/**', '**/cli/**', '**/testing/**', '**/src/**', '**/test/**'],
                message:
                  "Handler modules import the public API only: import { on, timer } from 'konductor'.",
              },
            ],
          },
        ],
      },
    },
    {
      // Built and packed code never reaches into test/ (outside the build's rootDir, never shipped); only
      // the repository-only demo, run from source, uses the simulated kubelet there.
      files: ['src/cli/**/*.ts', 'src/testing/**/*.ts'],
      excludedFiles: ['src/cli/start.ts'],
      rules: {
        'no-restricted-imports': [
          'error',
          {
            patterns: [
              {
                group: ['**/test/**'],
                message: "Packed code does not import the repository's test support (test/).",
              },
            ],
          },
        ],
      },
    },
  ],
};
