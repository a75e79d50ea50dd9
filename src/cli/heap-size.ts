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
/** The largest semi-space (young generation) the rule gives, in MiB: node's own on a large machine. */
export const MAX_SEMI_SPACE_MIB = 16;
/** The smallest semi-space the rule gives, in MiB. */
export const MIN_SEMI_SPACE_MIB = 2;

/** A node flag that sizes the heap, with its value; given by the user, it switches the rule off. */
const HEAP_FLAG = /(?:^|\s)(--max[-_](?:old|semi)[-_]space[-_]size\b\S*)/;

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
 * The semi-space size in MiB for an old-space ceiling: the largest power of two (V8 rounds up to one)
 * at most a 32nd of it, from {@link MIN_SEMI_SPACE_MIB} to {@link MAX_SEMI_SPACE_MIB}, so the young
 * generation (up to three semi-spaces) stays under a tenth of the ceiling. Requests in flight live for
 * tens of milliseconds; a smaller semi-space is collected more often and promotes them to the old
 * space, which then fills with garbage: a catch-up of 2,000 objects took 237 scavenges and 6.2 s of
 * CPU with 2 MiB, 37 and 5.0 s with 16 (docs/reference/performance.md).
 */
export function semiSpaceMiBFor(maxHeapMiB: number): number {
  let semi = MIN_SEMI_SPACE_MIB;
  while (semi * 2 <= Math.min(MAX_SEMI_SPACE_MIB, maxHeapMiB / 32)) semi *= 2;
  return semi;
}

/**
 * The node flags that size the heap: none when `NODE_OPTIONS` or node's own flags already size it
 * (the user decided); otherwise the old-space ceiling (`--max-heap`, else {@link maxHeapMiBFor}) and
 * its semi-spaces ({@link semiSpaceMiBFor}).
 */
export function heapFlags(inputs: HeapInputs): string[] {
  if (usersHeapFlag(inputs) !== undefined) return [];
  const maxHeap = inputs.maxHeapMiB ?? maxHeapMiBFor(inputs.limitBytes);
  return [`--max-old-space-size=${maxHeap}`, `--max-semi-space-size=${semiSpaceMiBFor(maxHeap)}`];
}

/**
 * The heap flag of the user's that makes `--max-heap` (`inputs.maxHeapMiB`) have no effect, when both
 * are given; undefined otherwise. Node is started with the user's flag alone, so the operator says so.
 */
export function heapFlagOverridingMaxHeap(
  inputs: Omit<HeapInputs, 'limitBytes'>,
): string | undefined {
  return inputs.maxHeapMiB === undefined ? undefined : usersHeapFlag(inputs);
}

/** The first heap flag of `NODE_OPTIONS` or node's own flags, if the user gave one. */
function usersHeapFlag(inputs: Omit<HeapInputs, 'limitBytes'>): string | undefined {
  for (const flags of [inputs.nodeOptions ?? '', ...(inputs.execArgv ?? [])]) {
    const match = HEAP_FLAG.exec(flags);
    if (match) return match[1];
  }
  return undefined;
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
