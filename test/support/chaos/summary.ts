import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

/** One scenario's figures for the summary printed at the end of the integration run. */
export interface ChaosRecord {
  scenario: string;
  faults: number;
  changesMade: number;
  changesHandled: number;
  lost: number;
  /** Side effects repeated although their first run's result had been recorded: must be 0. */
  duplicates: number;
  /** Runs repeated because a kill landed between their side effect and the write of their result (at-least-once). */
  repeatsAfterKills?: number;
}

/**
 * Appends a scenario's figures to the run's chaos record file (set up by the global setup as
 * `KONDUCTOR_CHAOS_RECORD`); the global teardown prints the totals as one summary line.
 */
export function recordChaos(record: ChaosRecord): void {
  const path = process.env.KONDUCTOR_CHAOS_RECORD;
  if (!path) return;
  mkdirSync(dirname(path), { recursive: true });
  appendFileSync(path, `${JSON.stringify(record)}\n`);
}
