import { readFileSync } from 'node:fs';
import {
  heapFlagOverridingMaxHeap,
  heapFlags,
  maxHeapMiBFor,
  memoryLimit,
  nodeOptionsForLimit,
  semiSpaceMiBFor,
} from '../../../src/cli/heap-size.js';
import { nodeFlagsFor } from '../../../src/cli/node-flags.js';

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;

describe('the heap konductor run sizes for where it runs', () => {
  test.each([
    [undefined, 512],
    [384 * MIB, 192],
    [1 * GIB, 512],
    [100 * MIB, 64],
    [64 * GIB, 4096],
  ])('a memory limit of %s bytes gives an old space of %i MiB', (limit, mib) => {
    expect(maxHeapMiBFor(limit)).toBe(mib);
  });

  test.each([
    [64, 2],
    [96, 2],
    [128, 4],
    [192, 4],
    [256, 8],
    [512, 16],
    [4096, 16],
  ])('an old space of %i MiB gets semi-spaces of %i MiB', (oldSpace, semi) => {
    expect(semiSpaceMiBFor(oldSpace)).toBe(semi);
  });

  test('without heap flags of its own, node gets the ceiling and semi-spaces sized from it', () => {
    expect(heapFlags({ limitBytes: 384 * MIB })).toEqual([
      '--max-old-space-size=192',
      '--max-semi-space-size=4',
    ]);
  });

  test('--max-heap sets the ceiling whatever the limit', () => {
    expect(heapFlags({ limitBytes: 384 * MIB, maxHeapMiB: 100 })[0]).toBe(
      '--max-old-space-size=100',
    );
  });

  test.each([
    ['--max-old-space-size=300'],
    ['--enable-source-maps --max-semi-space-size=4'],
    ['--max_old_space_size=300'],
  ])('NODE_OPTIONS %j sizes the heap instead: no flags are added', (nodeOptions) => {
    expect(heapFlags({ limitBytes: undefined, maxHeapMiB: 100, nodeOptions })).toEqual([]);
  });

  test('--max-heap beside a heap flag in NODE_OPTIONS is reported with the flag that wins', () => {
    expect(
      heapFlagOverridingMaxHeap({
        maxHeapMiB: 300,
        nodeOptions: '--enable-source-maps --max-old-space-size=200',
      }),
    ).toBe('--max-old-space-size=200');
  });

  test("--max-heap beside node's own heap flag is reported too", () => {
    expect(
      heapFlagOverridingMaxHeap({
        maxHeapMiB: 300,
        execArgv: ['--max-semi-space-size=8'],
      }),
    ).toBe('--max-semi-space-size=8');
  });

  test('--max-heap alone, or a heap flag alone, is nothing to report', () => {
    expect(heapFlagOverridingMaxHeap({ maxHeapMiB: 300 })).toBeUndefined();
    expect(heapFlagOverridingMaxHeap({ nodeOptions: '--max-old-space-size=200' })).toBeUndefined();
  });

  test("node's own heap flags size it instead", () => {
    expect(heapFlags({ limitBytes: undefined, execArgv: ['--max-old-space-size=90'] })).toEqual([]);
  });

  test('a flag that merely contains the words does not count as a heap flag', () => {
    expect(
      heapFlags({ limitBytes: undefined, nodeOptions: '--no-max-old-space-sizes' }),
    ).toHaveLength(2);
  });

  test("the Deployment's NODE_OPTIONS for its 384 MiB limit come from the same rule", () => {
    expect(nodeOptionsForLimit(384 * MIB)).toBe('--max-old-space-size=192 --max-semi-space-size=4');
  });

  test.each(['deploy/30-deployment.yaml', 'deploy/namespaced/30-deployment.yaml'])(
    '%s sets NODE_OPTIONS by the rule for its memory limit',
    (file) => {
      const yaml = readFileSync(new URL(`../../../${file}`, import.meta.url), 'utf8');
      const limit = /limits: \{ memory: (\d+)Mi \}/.exec(yaml)?.[1];
      const options = /- name: NODE_OPTIONS\s+value: (.+)/.exec(yaml)?.[1];
      expect(options).toBe(nodeOptionsForLimit(Number(limit) * MIB));
    },
  );

  test.each([
    [0, undefined],
    [2 ** 64, undefined],
    [24 * GIB, 24 * GIB],
    [25 * GIB, undefined],
    [512 * MIB, 512 * MIB],
  ])('libuv reporting %s bytes of 24 GiB means a limit of %s', (constrained, limit) => {
    expect(memoryLimit(constrained, 24 * GIB)).toBe(limit);
  });
});

describe('the node flags bin/konductor starts a command with', () => {
  test.each([
    [
      ['run', 'handlers/'],
      ['--max-old-space-size=512', '--max-semi-space-size=16', '--no-opt'],
    ],
    [
      ['dev', 'handlers/', '--max-heap', '96'],
      ['--max-old-space-size=96', '--max-semi-space-size=2'],
    ],
    [
      ['--max-heap=80', 'run', 'h.ts'],
      ['--max-old-space-size=80', '--max-semi-space-size=2', '--no-opt'],
    ],
    [['types', 'crds/'], []],
    [['--help'], []],
  ])('%j: %j', (argv, flags) => {
    expect(nodeFlagsFor(argv, {}, undefined)).toEqual(flags);
  });

  test('KONDUCTOR_MAX_HEAP sets the ceiling like the flag', () => {
    expect(nodeFlagsFor(['run', 'h.ts'], { KONDUCTOR_MAX_HEAP: '128' }, undefined)[0]).toBe(
      '--max-old-space-size=128',
    );
  });

  test('a command line that does not parse gets no flags: the command reports it', () => {
    expect(nodeFlagsFor(['run', 'h.ts', '--max-heap', 'lots'], {}, undefined)).toEqual([]);
  });

  test('run leaves the compiler alone when NODE_OPTIONS chose compiler flags', () => {
    expect(nodeFlagsFor(['run', 'h.ts'], { NODE_OPTIONS: '--jitless' }, undefined)).toEqual([
      '--max-old-space-size=512',
      '--max-semi-space-size=16',
    ]);
  });

  test('a 384 MiB container gets half of it', () => {
    expect(nodeFlagsFor(['run', 'h.ts'], {}, 384 * MIB)[0]).toBe('--max-old-space-size=192');
  });
});
