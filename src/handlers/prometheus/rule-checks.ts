/**
 * PrometheusRule checks as the operator runs them: the same results as `ruleFiles` (rules.ts), but
 * each object is measured and checked once per generation, the results are remembered for later
 * renders, and the work is cut into slices with a turn of the event loop between them, so that no
 * render holds the loop (and with it the Lease renewal and every other handler) for long, whatever
 * a tenant puts in its PrometheusRules.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { limitProblems, ruleSize, type RuleSize } from './rule-limits.js';
import {
  checkRuleFileSteps,
  refusedWhole,
  ruleFormat,
  selectRules,
  type CheckedRuleFile,
  type PrometheusRuleResource,
  type RuleFormat,
} from './rules.js';
import type { NamespaceInfo, PrometheusResource } from './types.js';

/** The longest stretch of checking between two turns of the event loop, in milliseconds. */
export const CHECK_SLICE_MS = 10;
/** Remembered rule files, in characters of their content; past it the least recently used objects are forgotten. */
export const MAX_REMEMBERED_CHARS = 16 * 1024 * 1024;

/** What is remembered of one object generation. */
interface Remembered {
  generation: number | undefined;
  size: RuleSize;
  /** The checked file per rule format (Prometheus 2 and 3 read different files), without the object. */
  files: Map<string, Omit<CheckedRuleFile, 'rule'>>;
  chars: number;
}

/** Options of {@link RuleChecks}; the defaults are for the operator, tests shorten them. */
export interface RuleChecksOptions {
  /** Milliseconds of checking between two turns of the event loop. */
  sliceMs?: number;
  /** The clock slices are measured with. */
  now?: () => number;
  /** Characters of rule files remembered. */
  maxChars?: number;
  /** The check of one object (rules.ts's `checkRuleFileSteps`). */
  check?: (rule: PrometheusRuleResource, format: RuleFormat) => Generator<void, CheckedRuleFile>;
}

function formatKey(format: RuleFormat): string {
  return `${format.groupLabels ? 'L' : '-'}${format.holtWinters ? 'H' : '-'}`;
}

/**
 * Checks the PrometheusRules a Prometheus selects, remembering each object's results per uid and
 * generation: a later render of any Prometheus takes them as they are, and an object refused for its
 * size is measured once and never parsed. Memory is bounded by {@link MAX_REMEMBERED_CHARS}, and an
 * object's results are dropped when it leaves the cache.
 */
export class RuleChecks {
  private readonly remembered = new Map<string, Remembered>();
  private chars = 0;
  private readonly sliceMs: number;
  private readonly now: () => number;
  private readonly maxChars: number;
  private readonly check: (
    rule: PrometheusRuleResource,
    format: RuleFormat,
  ) => Generator<void, CheckedRuleFile>;
  private sliceStart = 0;

  constructor(options: RuleChecksOptions = {}) {
    this.sliceMs = options.sliceMs ?? CHECK_SLICE_MS;
    this.now = options.now ?? (() => performance.now());
    this.maxChars = options.maxChars ?? MAX_REMEMBERED_CHARS;
    this.check = options.check ?? checkRuleFileSteps;
  }

  /**
   * What `ruleFiles(prometheus, rules, namespaces)` returns, from remembered results where the
   * object generation was checked before. Forgets the objects no longer in `rules` (every
   * PrometheusRule the operator sees).
   */
  async files(
    prometheus: PrometheusResource,
    rules: readonly PrometheusRuleResource[],
    namespaces: readonly NamespaceInfo[],
  ): Promise<CheckedRuleFile[]> {
    this.retain(rules);
    this.sliceStart = this.now();
    const format = ruleFormat(prometheus);
    const selected = selectRules(prometheus, rules, namespaces);
    const sizes: RuleSize[] = [];
    for (const rule of selected) {
      sizes.push(this.entry(rule).size);
      await this.pauseIfDue();
    }
    const limits = limitProblems(selected, sizes);
    const out: CheckedRuleFile[] = [];
    for (const [i, rule] of selected.entries()) {
      const problem = limits[i];
      out.push(
        problem === undefined ? await this.checked(rule, format) : refusedWhole(rule, problem),
      );
      await this.pauseIfDue();
    }
    return out;
  }

  /** How many objects have remembered results. */
  get size(): number {
    return this.remembered.size;
  }

  /** The object generation's entry, measured now if it is new (which is all a refused object ever costs). */
  private entry(rule: PrometheusRuleResource): Remembered {
    const uid = rule.metadata.uid;
    const found = uid === undefined ? undefined : this.remembered.get(uid);
    if (found !== undefined && found.generation === rule.metadata.generation) return found;
    if (uid !== undefined) this.forget(uid);
    const entry: Remembered = {
      generation: rule.metadata.generation,
      size: ruleSize(rule),
      files: new Map(),
      chars: 0,
    };
    if (uid !== undefined) this.remembered.set(uid, entry);
    return entry;
  }

  private async checked(
    rule: PrometheusRuleResource,
    format: RuleFormat,
  ): Promise<CheckedRuleFile> {
    const entry = this.entry(rule);
    const key = formatKey(format);
    const found = entry.files.get(key);
    if (found !== undefined) return { ...found, rule };
    const steps = this.check(rule, format);
    let next = steps.next();
    while (next.done !== true) {
      await this.pauseIfDue();
      next = steps.next();
    }
    const { rule: _rule, ...file } = next.value;
    const uid = rule.metadata.uid;
    // Still this generation's entry (nothing replaced it while checking): remember the file.
    if (uid !== undefined && this.remembered.get(uid) === entry) {
      const chars = file.content?.length ?? 0;
      entry.files.set(key, file);
      entry.chars += chars;
      this.chars += chars;
      this.remembered.delete(uid);
      this.remembered.set(uid, entry);
      this.evict(uid);
    }
    return next.value;
  }

  private async pauseIfDue(): Promise<void> {
    if (this.now() - this.sliceStart < this.sliceMs) return;
    await nextTurn();
    this.sliceStart = this.now();
  }

  /** Forgets the least recently checked objects past the budget, never `keep`. */
  private evict(keep: string): void {
    for (const uid of [...this.remembered.keys()]) {
      if (this.chars <= this.maxChars) return;
      if (uid !== keep) this.forget(uid);
    }
  }

  private retain(rules: readonly PrometheusRuleResource[]): void {
    const live = new Set(rules.map((rule) => rule.metadata.uid));
    for (const uid of [...this.remembered.keys()]) if (!live.has(uid)) this.forget(uid);
  }

  private forget(uid: string): void {
    this.chars -= this.remembered.get(uid)?.chars ?? 0;
    this.remembered.delete(uid);
  }
}
