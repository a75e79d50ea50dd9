import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import * as root from 'konductor';
import * as runtime from 'konductor/runtime';
import * as testing from 'konductor/testing';

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
      if (statement.exportClause && ts.isNamespaceExport(statement.exportClause)) names.push(statement.exportClause.name.text);
      else if (!statement.exportClause || !ts.isNamedExports(statement.exportClause)) throw new Error(`${entryPoint}: name what is exported instead of \`export *\``);
      else names.push(...statement.exportClause.elements.map((element) => element.name.text));
    } else if (ts.canHaveModifiers(statement) && ts.getModifiers(statement)?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword)) {
      throw new Error(`${entryPoint}: declares instead of re-exporting (line ${source.getLineAndCharacterOfPosition(statement.getStart(source)).line + 1})`);
    }
  }
  return names.sort();
}

const names = {
  konductor: exportedNames('src/framework/index.ts'),
  'konductor/runtime': exportedNames('src/framework/runtime/index.ts'),
  'konductor/testing': exportedNames('src/testing/index.ts'),
};

/** What an operator author writes against. */
const ROOT = [
  'ABSENT',
  'ActivityContext',
  'ActivityFn',
  'ActivityKind',
  'ActivityOptions',
  'ActivitySpec',
  'AdmissionContext',
  'AdmissionError',
  'AdmissionHandlerFn',
  'AdmissionOperation',
  'AdmissionOptions',
  'AdmissionSpec',
  'AdmissionUser',
  'AdoptOptions',
  'ApiClient',
  'ApiError',
  'ApplyObject',
  'ApplyOptions',
  'Cache',
  'CacheOptions',
  'CacheSpec',
  'CachedResource',
  'ChangeContext',
  'ChangeHandlerFn',
  'ChangeHandlerOptions',
  'ChangeHandlerSpec',
  'ChangeReason',
  'ChangeValue',
  'CleanupOptions',
  'ClusterAccess',
  'Condition',
  'Conditions',
  'ConversionContext',
  'ConversionFn',
  'ConversionSpec',
  'CustomObject',
  'DaemonContext',
  'DaemonHandlerFn',
  'DaemonOptions',
  'DaemonSpec',
  'DeepPartial',
  'DeleteOptions',
  'Diff',
  'DiffItem',
  'DurationInput',
  'ErrorsMode',
  'EssenceOf',
  'EventContext',
  'EventHandlerFn',
  'EventHandlerOptions',
  'EventHandlerSpec',
  'EventType',
  'FieldChangeContext',
  'FieldValue',
  'FilterContext',
  'HandlerClass',
  'HandlerOptions',
  'HandlerRetriesError',
  'HandlerSpec',
  'HandlerTimeoutError',
  'HealthServerError',
  'Index',
  'IndexContext',
  'IndexFn',
  'IndexOptions',
  'IndexSpec',
  'Indexes',
  'IsObjectType',
  'JsonPatchOptions',
  'Kind',
  'KindReference',
  'KubeObject',
  'KubeStatus',
  'KubeconfigError',
  'KubeconfigSource',
  'LabelSelector',
  'ListOptions',
  'ListResult',
  'LogFormat',
  'Logger',
  'LoggerOptions',
  'Memo',
  'MergePatch',
  'MergePatchValue',
  'MetaFilter',
  'MutationContext',
  'ObjectContext',
  'ObjectEvents',
  'ObjectKey',
  'ObjectOf',
  'ObjectRef',
  'Operator',
  'OperatorOptions',
  'OwnedChange',
  'OwnedContext',
  'OwnedEventType',
  'OwnedHandlerFn',
  'OwnedOptions',
  'OwnedSpec',
  'OwnerReference',
  'OwnerReferenceOptions',
  'PRESENT',
  'Patch',
  'PatchOptions',
  'PermanentError',
  'ProbeOptions',
  'Query',
  'ReconcileContext',
  'ReconcileHandlerFn',
  'ReconcileOptions',
  'ReconcileResult',
  'Registry',
  'RequestCounter',
  'RequestInit',
  'ResourceClient',
  'ResourceObject',
  'SpecOf',
  'StartupError',
  'StartupOptions',
  'StatusOf',
  'StatusPatch',
  'TemporaryError',
  'TimerContext',
  'TimerHandlerFn',
  'TimerOptions',
  'TimerSpec',
  'TypedObject',
  'ValueFilter',
  'WatchRelation',
  'WriteOptions',
  'adopt',
  'createLogger',
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
  // Admission webhook certificates (issue 17).
  'CertificateBundle',
  'CertificateStore',
  'CertificateStoreOptions',
  'issueAuthority',
  'issueServingCertificate',
  // Admission webhooks (issue 17).
  'WebhookServer',
  'conversionPath',
  'webhookPath',
];


describe('the root entry point (konductor)', () => {
  test('exports exactly what an operator author writes against (this list changes only on purpose)', () => {
    expect(names.konductor).toEqual([...ROOT].sort());
  });

  test('exports no engine internal', () => {
    expect(names.konductor.filter((name) => INTERNALS.includes(name))).toEqual([]);
  });

  test('loads with its decorators and operator', () => {
    expect([typeof root.on.create, typeof root.timer, typeof root.daemon, typeof root.createOperator]).toEqual(['function', 'function', 'function', 'function']);
    expect(Object.keys(root)).not.toContain('TimerEngine');
  });

  test('no longer exports the resource resolver (WatchHub’s own) or ChangeKind (ChangeReason names the change)', () => {
    expect(names.konductor).not.toContain('resolveResource');
    expect(names.konductor).not.toContain('ChangeKind');
  });
});

describe('the runtime entry point (konductor/runtime)', () => {
  test('exports the engine internals', () => {
    expect(names['konductor/runtime']).toEqual(expect.arrayContaining(INTERNALS));
    expect([typeof runtime.TimerEngine, typeof runtime.DaemonEngine, typeof runtime.Reactor, typeof runtime.WatchHub, typeof runtime.nextRunAt]).toEqual([
      'function',
      'function',
      'function',
      'function',
      'function',
    ]);
  });

  test('shares no name with the root', () => {
    expect(names['konductor/runtime'].filter((name) => names.konductor.includes(name))).toEqual([]);
  });
});

describe('the testing kit (konductor/testing)', () => {
  test('ships no etcd-only support: the etcd pod runner is the repository’s test support', () => {
    expect(names['konductor/testing']).not.toContain('EtcdPodRunner');
    expect(names['konductor/testing']).not.toContain('LoopbackAddresses');
    expect(Object.keys(testing)).toEqual(expect.arrayContaining(['TestControlPlane', 'runOperator', 'waitFor']));
  });
});
