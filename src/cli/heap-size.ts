// How far `konductor run` lets V8's heap grow. Node sizes the heap from the memory it sees: on a
// workstation or a node without a limit that is the machine (a 4 GB old space and 16 MB semi-spaces
// on 24 GB), and V8 lets garbage pile up in proportion (it grows the old space up to 4x per collection
// when the ceiling is that high, 1.3x when it is small). An operator's live heap is small and grows
// with the objects it watches, so the ceiling follows the memory the process may use, or the work.
// The flags can only be given when node starts (V8 ignores them later), so bin/konductor asks this
// module for them and starts node with them.
import { totalmem } from 'node:os';

const MIB = 1024 * 1024;

/** The old-space ceiling without a memory limit, in MiB: room for about 350,000 objects of 0.5 KB (docs/running/sizing.md). */
export const UNLIMITED_MAX_HEAP_MIB = 512;
/** The smallest ceiling the rule gives, in MiB (an idle operator's heap is about 15 MB). */
export const MIN_MAX_HEAP_MIB = 64;
/** The largest ceiling the rule gives, in MiB: node's own default on a large machine. */
export const MAX_MAX_HEAP_MIB = 4096;
/** The semi-space (young generation) size the rule gives, in MiB; V8 picks 16 on a large machine. */
export const SEMI_SPACE_MIB = 2;

/** The node flags that size the heap; given by the user, they switch the rule off. */
const HEAP_FLAGS = /(?:^|\s)--max[-_](?:old|semi)[-_]space[-_]size\b/;

/** What the heap is sized from. */
export interface HeapInputs {
  /** Bytes the process may use (its cgroup's memory limit); undefined: no limit. */
  readonly limitBytes: number | undefined;
  /** `--max-heap` / `KONDUCTOR_MAX_HEAP` in MiB; undefined: the rule decides. */
  readonly maxHeapMiB?: number;
  /** `NODE_OPTIONS` as set. */
  readonly nodeOptions?: string;
  /** Node's own command-line flags (`process.execArgv`). */
  readonly execArgv?: readonly string[];
}

/**
 * The old-space ceiling in MiB for a memory limit: half of it (the rest is code, buffers, stacks and
 * sockets), from {@link MIN_MAX_HEAP_MIB} to {@link MAX_MAX_HEAP_MIB}; {@link UNLIMITED_MAX_HEAP_MIB}
 * without a limit.
 */
export function maxHeapMiBFor(limitBytes: number | undefined): number {
  if (limitBytes === undefined) return UNLIMITED_MAX_HEAP_MIB;
  const half = Math.floor(limitBytes / MIB / 2);
  return Math.min(MAX_MAX_HEAP_MIB, Math.max(MIN_MAX_HEAP_MIB, half));
}

/**
 * The node flags that size the heap: none when `NODE_OPTIONS` or node's own flags already size it
 * (the user decided); otherwise the old-space ceiling (`--max-heap`, else {@link maxHeapMiBFor}) and
 * {@link SEMI_SPACE_MIB} semi-spaces.
 */
export function heapFlags(inputs: HeapInputs): string[] {
  const given = [inputs.nodeOptions ?? '', ...(inputs.execArgv ?? [])];
  if (given.some((flags) => HEAP_FLAGS.test(flags))) return [];
  const maxHeap = inputs.maxHeapMiB ?? maxHeapMiBFor(inputs.limitBytes);
  return [`--max-old-space-size=${maxHeap}`, `--max-semi-space-size=${SEMI_SPACE_MIB}`];
}

/** `NODE_OPTIONS` with the heap flags for a container's memory limit, as the Deployment sets it. */
export function nodeOptionsForLimit(limitBytes: number): string {
  return heapFlags({ limitBytes }).join(' ');
}

/**
 * The memory this process may use in bytes (its cgroup's limit, v1 or v2, as libuv reads it), or
 * undefined when there is none: libuv reports "none" as 0 or as a huge number, so anything above
 * the machine's memory counts as no limit.
 */
export function memoryLimit(
  constrained: number = process.constrainedMemory?.() ?? 0,
  total: number = totalmem(),
): number | undefined {
  // At the machine's memory counts as a limit: under LXCFS or gVisor the machine is the container.
  return constrained > 0 && constrained <= total ? constrained : undefined;
}
