import { currentRun } from '../observability/tracing.js';
import type { ChangeHandlerSpec } from '../intents/handler-specs.js';
import type { Patch } from '../intents/patch.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import { delayRemainingMs, isFinished, type ProgressRecord } from '../state/progress.js';
import { executeAttempt, type ExecutionEnvironment } from './execution.js';
import type { Selection } from './handler-selection.js';
import type { HandlerResult } from './object-memory.js';
import { handlerStep, recordForChange, type Change } from './progression.js';

/** A handler selected for a cause, with its stored progress (checked). */
export interface Selected {
  selection: Selection;
  stored: ProgressRecord | undefined;
}

/** The handlers of one cause, on one state of the object. */
export interface HandlerRun {
  body: KubeObject;
  selected: readonly Selected[];
  change: Change;
  /**
   * Results finished in an earlier run for this very state whose write failed: written again, not re-run.
   * Results finished now join it, kept should this run's write fail too.
   */
  unwritten: Map<string, HandlerResult>;
  /** A handler's own logger. */
  loggerFor: (handler: ChangeHandlerSpec) => Logger;
  signal: AbortSignal;
}

/** What running the handlers left to write, and when to look again. */
export interface HandlerRunResult {
  records: Map<string, ProgressRecord>;
  patches: Patch[];
  /** The soonest delay of a pending handler; unset when none waits. */
  nextDelayMs: number | undefined;
}

/**
 * Each selected handler in turn, in order: kept as it is when finished, its unwritten result reused,
 * left to wait for its delay, or attempted now.
 */
export async function runHandlers(
  environment: ExecutionEnvironment,
  run: HandlerRun,
): Promise<HandlerRunResult> {
  currentRun()?.set('konductor.run.cause', run.change.reason);
  const result: HandlerRunResult = { records: new Map(), patches: [], nextDelayMs: undefined };
  const waitAtMost = (delayMs: number): void => {
    result.nextDelayMs = Math.min(result.nextDelayMs ?? delayMs, delayMs);
  };
  for (const { selection, stored } of run.selected) {
    const { handler } = selection;
    const step = handlerStep(
      recordForChange(handler, stored, run.change),
      run.unwritten.get(handler.id),
      environment.now(),
    );
    if (step.step === 'finished' || step.step === 'delayed') {
      result.records.set(handler.id, step.record);
      if (step.step === 'delayed') waitAtMost(step.delayMs);
      continue;
    }
    if (step.step === 'unwritten') {
      result.patches.push(step.result.patch);
      result.records.set(handler.id, step.result.record);
      continue;
    }
    const attempt = {
      selection,
      record: step.record,
      body: run.body,
      change: run.change,
      logger: run.loggerFor(handler),
      signal: run.signal,
    };
    const outcome = await executeAttempt(environment, attempt);
    result.patches.push(outcome.patch);
    result.records.set(handler.id, outcome.record);
    if (isFinished(outcome.record)) run.unwritten.set(handler.id, outcome);
    else waitAtMost(delayRemainingMs(outcome.record, environment.now()));
  }
  return result;
}
