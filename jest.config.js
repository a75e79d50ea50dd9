// Native ESM: @kubernetes/client-node 1.x is ESM-only, so tests run as ES modules
// (node --experimental-vm-modules) and ts-jest emits ESM. Test files need nothing special.
/** @type {import('jest').Config} */
const shared = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  // Every file starts with node's own http: see the file for why.
  setupFiles: ['<rootDir>/test/support/unpatched-http.ts'],
  moduleNameMapper: {
    '^konductor$': '<rootDir>/src/framework/index.ts',
    '^konductor/testing$': '<rootDir>/src/testing/index.ts',
    '^konductor/testing/chaos$': '<rootDir>/src/testing/chaos/index.ts',
    // Relative imports are written with .js (NodeNext); map them back to the .ts sources.
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }],
  },
};

/**
 * Integration specs whose figures are timings (detection and takeover limits, latencies, readiness
 * during an upgrade): they run one at a time after the rest (`npm run test:jest`), so another file's
 * load on the 2 cores never decides them.
 */
const timed = [
  // The chaos scenarios with latency or attempt limits; the others (API server restart, operator
  // kills, RBAC and CRD) count lost and duplicate changes only and run in the parallel pass.
  '<rootDir>/test/integration/chaos/black-hole.test.ts',
  '<rootDir>/test/integration/chaos/stall.test.ts',
  '<rootDir>/test/integration/chaos/throttling.test.ts',
  '<rootDir>/test/integration/chaos/etcd-restart.test.ts',
  '<rootDir>/test/integration/chaos/leader-kills.test.ts',
  '<rootDir>/test/integration/chaos/webhook-flood.test.ts',
  '<rootDir>/test/integration/etcd/upgrade.test.ts',
  '<rootDir>/test/integration/etcd/member-death.test.ts',
  '<rootDir>/test/integration/bench/',
  '<rootDir>/test/integration/admission/certificate-rotation.test.ts',
];

const integration = {
  ...shared,
  // One real control plane per jest worker, shared by the integration test files that worker runs.
  setupFiles: [...shared.setupFiles, '<rootDir>/test/support/worker-plane.ts'],
  globalSetup: '<rootDir>/test/support/global-setup.js',
  globalTeardown: '<rootDir>/test/support/global-teardown.js',
};

/**
 * End-to-end specs on the local node (scripts/cluster): real kubelet, containerd and Pods. They run after
 * the jest suite, one file at a time, each file on its own. `npm run test:e2e` is the platform's:
 * `e2e-harness` starts and stops nodes itself; `e2e` shares one node that its global setup starts, and
 * its teardown checks that stopping it left the host as it was. `npm run test:e2e:operators` runs the
 * bundled operators' specs (`e2e-operators`) the same way, on a node of their own.
 */
const e2e = { ...shared };

/** @type {import('jest').Config} */
export default {
  // Integration tests start real processes; unit tests finish long before this.
  testTimeout: 60_000,
  // Two files at a time, each integration worker on its own control plane (test/support/global-setup.js):
  // most integration time is waiting on real processes, so two workers nearly halve a 2-core run.
  maxWorkers: 2,
  // Exit once the run and the global teardown are done: on 2026-11-24 a clean-clone CI run passed every
  // suite (172/172) and then stayed up for 10+ minutes on a handle left in jest's main process (not yet
  // found; two esbuild services from ts-jest/tsx were its only child processes), which a CI time limit turns red.
  forceExit: true,
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    {
      ...integration,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      testPathIgnorePatterns: ['/node_modules/', ...timed],
    },
    {
      ...integration,
      displayName: 'integration-timed',
      testMatch: timed.map((path) => (path.endsWith('/') ? `${path}**/*.test.ts` : path)),
    },
    { ...e2e, displayName: 'e2e-harness', testMatch: ['<rootDir>/test/e2e/harness/**/*.test.ts'] },
    {
      ...e2e,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/e2e/node/**/*.test.ts'],
      globalSetup: '<rootDir>/test/e2e/support/global-setup.js',
      globalTeardown: '<rootDir>/test/e2e/support/global-teardown.js',
    },
    {
      ...e2e,
      displayName: 'e2e-operators',
      testMatch: ['<rootDir>/test/e2e/operators/**/*.test.ts'],
      globalSetup: '<rootDir>/test/e2e/support/global-setup.js',
      globalTeardown: '<rootDir>/test/e2e/support/global-teardown.js',
    },
  ],
};
