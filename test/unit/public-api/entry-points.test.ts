import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import * as root from 'konductor';
import * as runtime from 'konductor/runtime';
import * as testing from 'konductor/testing';

// The package's entry points, as the TypeScript compiler sees them: every exported name, types included.
// The root list is pinned so that an accidental export shows up in review as a change to this file.
const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const ENTRY_POINTS = {
  konductor: join(repo, 'src/framework/index.ts'),
  'konductor/runtime': join(repo, 'src/framework/runtime/index.ts'),
  'konductor/testing': join(repo, 'src/testing/index.ts'),
} as const;

function exportedNames(): Record<keyof typeof ENTRY_POINTS, string[]> {
  const program = ts.createProgram(Object.values(ENTRY_POINTS), {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    noEmit: true,
    skipLibCheck: true,
  });
  const checker = program.getTypeChecker();
  const namesOf = (file: string): string[] => {
    const symbol = checker.getSymbolAtLocation(program.getSourceFile(file)!);
    return checker
      .getExportsOfModule(symbol!)
      .map((exported) => exported.name)
      .sort();
  };
  return {
    konductor: namesOf(ENTRY_POINTS.konductor),
    'konductor/runtime': namesOf(ENTRY_POINTS['konductor/runtime']),
    'konductor/testing': namesOf(ENTRY_POINTS['konductor/testing']),
  };
}

/** What an operator author writes against. */
const ROOT = [
  'ABSENT',
  'ApiClient',
  'ApiError',
  'ChangeContext',
  'ChangeHandlerFn',
  'ChangeHandlerOptions',
  'ChangeHandlerSpec',
  'ChangeReason',
  'ChangeValue',
  'ClusterAccess',
  'DaemonContext',
  'DaemonHandlerFn',
  'DaemonOptions',
  'DaemonSpec',
  'Diff',
  'DiffItem',
  'DurationInput',
  'ErrorsMode',
  'EssenceOf',
  'EventContext',
  'EventHandlerFn',
  'EventHandlerSpec',
  'EventType',
  'FieldChangeContext',
  'FieldValue',
  'HandlerClass',
  'HandlerOptions',
  'HandlerRetriesError',
  'HandlerSpec',
  'HandlerTimeoutError',
  'IsObjectType',
  'KubeObject',
  'KubeStatus',
  'KubeconfigError',
  'KubeconfigSource',
  'LogFormat',
  'Logger',
  'LoggerOptions',
  'MergePatch',
  'MergePatchValue',
  'MetaFilter',
  'ObjectContext',
  'ObjectOf',
  'Operator',
  'OperatorOptions',
  'PRESENT',
  'Patch',
  'PermanentError',
  'Query',
  'Registry',
  'RequestCounter',
  'RequestInit',
  'SpecOf',
  'StatusOf',
  'TemporaryError',
  'TimerContext',
  'TimerHandlerFn',
  'TimerOptions',
  'TimerSpec',
  'TypedObject',
  'ValueFilter',
  'createLogger',
  'createOperator',
  'daemon',
  'events',
  'loadKubeconfig',
  'on',
  'silentLogger',
  'timer',
];

/**
 * Runtime names the root still re-exports until the specs importing them from there import them from
 * `konductor/runtime`; then they leave the root and this list empties.
 */
const TRANSITIONAL = ['DIFF_BASE_KEY', 'FINALIZER', 'JsonPatchOp', 'ProgressRecord', 'progressKey'];

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
];

const names = exportedNames();

describe('the root entry point (konductor)', () => {
  test('exports exactly what an operator author writes against (this list changes only on purpose)', () => {
    expect(names.konductor).toEqual([...ROOT, ...TRANSITIONAL].sort());
  });

  test('exports no engine internal', () => {
    expect(names.konductor.filter((name) => INTERNALS.includes(name))).toEqual([]);
  });

  test('loads with its decorators and operator', () => {
    expect([typeof root.on.create, typeof root.timer, typeof root.daemon, typeof root.createOperator]).toEqual(['function', 'function', 'function', 'function']);
    expect(Object.keys(root)).not.toContain('TimerEngine');
  });

  test('no longer exports the removed resource resolver or ChangeKind (ChangeReason names the change)', () => {
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

  test('shares no name with the root but the transitional ones', () => {
    expect(names['konductor/runtime'].filter((name) => names.konductor.includes(name))).toEqual(TRANSITIONAL);
  });
});

describe('the testing kit (konductor/testing)', () => {
  test('ships no etcd-only support: the etcd pod runner is the etcd operator’s own test support', () => {
    expect(names['konductor/testing']).not.toContain('EtcdPodRunner');
    expect(names['konductor/testing']).not.toContain('LoopbackAddresses');
    expect(Object.keys(testing)).toEqual(expect.arrayContaining(['TestControlPlane', 'runOperator', 'waitFor']));
  });
});
