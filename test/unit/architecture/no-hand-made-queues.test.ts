import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

// The bundled operators are level-triggered reconciles: the framework queues, serializes, coalesces
// and requeues. What they once built by hand for it must not come back.
const root = fileURLToPath(new URL('../../..', import.meta.url));
const handlers = join(root, 'src/handlers');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory())
      return entry.name === 'testing' || entry.name === 'generated' ? [] : sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const files = sources(handlers).map((path) => ({
  path: relative(root, path),
  text: readFileSync(path, 'utf8'),
}));

/** Files matching `pattern`, by path. */
function matching(pattern: RegExp): string[] {
  return files.filter(({ text }) => pattern.test(text)).map(({ path }) => path);
}

describe('the bundled operators keep no work queue, mutex or polling loop of their own', () => {
  test('no daemon polls a cluster and no wake-up is made by hand', () => {
    expect(matching(/@daemon\(|memberWake|MemberWake/)).toEqual([]);
  });

  test('no render queue, re-render loop or per-object mutex', () => {
    expect(
      matching(/renderAll|inputChanges|this\.again\b|exclusive\(|private readonly renders\b/),
    ).toEqual([]);
  });

  test('no loop sleeps while it waits for the cluster: only the S3 client backs off between its own retries', () => {
    expect(matching(/setTimeout as sleep|from 'node:timers\/promises'.*sleep/)).toEqual([
      'src/handlers/etcd/storage/s3-storage.ts',
    ]);
  });

  test('the cluster and the Prometheus controllers are reconciles', () => {
    expect(matching(/@on\.reconcile\(/).sort()).toEqual([
      'src/handlers/etcd/clusters.ts',
      'src/handlers/prometheus/operator.ts',
    ]);
  });
});
