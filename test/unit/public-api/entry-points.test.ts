import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import * as root from 'konductor';
import * as testing from 'konductor/testing';
import * as chaos from 'konductor/testing/chaos';

// The package's entry points: every name each exports, types included, read from its export
// statements (an entry point is a list of re-exports; `export *` would hide what it exports, so it
// fails here). The root list is pinned so that an accidental export shows up in review.
const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

function exportedNames(entryPoint: string): string[] {
  const file = join(repo, entryPoint);
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022);
  const names: string[] = [];
  for (const statement of source.statements) {
    if (ts.isExportDeclaration(statement)) {
      // `export * as kinds` names what it exports (one namespace); a bare `export *` does not.
      if (statement.exportClause && ts.isNamespaceExport(statement.exportClause))
        names.push(statement.exportClause.name.text);
      else if (!statement.exportClause || !ts.isNamedExports(statement.exportClause))
        throw new Error(`${entryPoint}: name what is exported instead of \`export *\``);
      else names.push(...statement.exportClause.elements.map((element) => element.name.text));
    } else if (
      ts.canHaveModifiers(statement) &&
      ts.getModifiers(statement)?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword)
    ) {
      throw new Error(
        `${entryPoint}: declares instead of re-exporting (line ${source.getLineAndCharacterOfPosition(statement.getStart(source)).line + 1})`,
      );
    }
  }
  return names.sort();
}

const names = {
  konductor: exportedNames('src/framework/index.ts'),
  'konductor/testing': exportedNames('src/testing/index.ts'),
  'konductor/testing/chaos': exportedNames('src/testing/chaos/index.ts'),
};

/** What an operator author writes against: option and handler-function types are inferred, not named. */
const ROOT = [
  'ABSENT',
  'ActivityContext',
  'AdmissionContext',
  'AdmissionError',
  'ApiClient',
  'ApiError',
  'Cache',
  'ChangeContext',
  'Condition',
  'Conditions',
  'ConversionContext',
  'CustomObject',
  'DaemonContext',
  'Diff',
  'DiffItem',
  'DurationInput',
  'EventContext',
  'EventType',
  'FieldChangeContext',
  'FilterContext',
  'HandlerRetriesError',
  'HandlerTimeoutError',
  'HealthServerError',
  'IndexContext',
  'Indexes',
  'Kind',
  'KubeObject',
  'KubeconfigError',
  'Logger',
  'LoggerOptions',
  'Memo',
  'MutationContext',
  'ObjectContext',
  'ObjectKey',
  'Operator',
  'OperatorOptions',
  'OwnedContext',
  'OwnerReference',
  'PRESENT',
  'Patch',
  'PermanentError',
  'ReconcileContext',
  'ReconcileResult',
  'Registry',
  'ResourceClient',
  'StartupError',
  'TemporaryError',
  'TimerContext',
  'adopt',
  'createLogger',
  'loadTracing',
  'Tracing',
  'TracingOptions',
  'createOperator',
  'daemon',
  'defineKind',
  'events',
  'kinds',
  'loadKubeconfig',
  'on',
  'ownerReference',
  'silentLogger',
  'timer',
  'watch',
];

/** Building blocks: engines, reactor, watches, discovery. None of them is for handler authors. */
const INTERNALS = [
  'Backoff',
  'DaemonEngine',
  'EventPoster',
  'MetricsRecorder',
  'ObjectApi',
  'Reactor',
  'TimerEngine',
  'WatchHub',
  'discoverResource',
  'nextRunAt',
  'toMilliseconds',
  'watchResource',
  // Admission webhook certificates.
  'CertificateBundle',
  'CertificateStore',
  'CertificateStoreOptions',
  'issueAuthority',
  'issueServingCertificate',
  // Admission webhooks.
  'WebhookServer',
  'conversionPath',
  'webhookPath',
];

describe('the root entry point (konductor)', () => {
  test('exports exactly what an operator author writes against (this list changes only on purpose)', () => {
    expect(names.konductor).toEqual([...ROOT].sort());
  });

  test('stays at most 70 names', () => {
    expect(ROOT.length).toBeLessThanOrEqual(70);
  });

  test('exports no engine internal', () => {
    expect(names.konductor.filter((name) => INTERNALS.includes(name))).toEqual([]);
  });

  test('loads with its decorators and operator', () => {
    expect([
      typeof root.on.create,
      typeof root.timer,
      typeof root.daemon,
      typeof root.createOperator,
    ]).toEqual(['function', 'function', 'function', 'function']);
    expect(Object.keys(root)).not.toContain('TimerEngine');
  });

  test('no longer exports the resource resolver (WatchHub’s own) or ChangeKind (ChangeReason names the change)', () => {
    expect(names.konductor).not.toContain('resolveResource');
    expect(names.konductor).not.toContain('ChangeKind');
  });
});

describe('the package exports', () => {
  // The engines, reactor and watches are the operator's parts, not an API: no subpath exposes them.
  test('name the three entry points and no building-block subpath', () => {
    const manifest = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
      exports: Record<string, unknown>;
    };
    expect(Object.keys(manifest.exports)).toEqual(['.', './testing', './testing/chaos']);
  });
});

/** The user's test kit: process plumbing stays inside it, the fault proxy has its own entry point. */
const TESTING = [
  'ControlPlaneOptions',
  'NodeCluster',
  'NodeClusterOptions',
  'ServiceAccountRef',
  'TestControlPlane',
  'TestOperator',
  'applyManifests',
  'installCrds',
  'kubeConfigForServiceAccount',
  'kubeConfigWithToken',
  'readCrds',
  'readManifests',
  'runOperator',
  'waitFor',
];

describe('the testing kit (konductor/testing)', () => {
  test('exports the kit a user tests an operator with (this list changes only on purpose)', () => {
    expect(names['konductor/testing']).toEqual([...TESTING].sort());
    expect(Object.keys(testing)).toEqual(
      expect.arrayContaining(['TestControlPlane', 'runOperator', 'waitFor', 'NodeCluster']),
    );
  });

  test('keeps the fault proxy under konductor/testing/chaos', () => {
    expect(names['konductor/testing/chaos']).toContain('FaultProxy');
    expect(typeof chaos.FaultProxy).toBe('function');
  });
});
