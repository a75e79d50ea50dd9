import { existsSync, readFileSync } from 'node:fs';
import type { LedgerEntry } from '../../fixtures/handlers/ledger-widgets.js';
import type { Widgets } from '../widgets.js';

export type { LedgerEntry };

/** Every complete line of a ledger file (a line cut by a kill mid-write is skipped). */
export function readLedger(path: string): LedgerEntry[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .flatMap((line) => {
      try {
        return line ? [JSON.parse(line) as LedgerEntry] : [];
      } catch {
        return [];
      }
    });
}

/** What a test did to one object: its uid-independent name, every size it was given, whether it was deleted. */
export interface ExpectedObject {
  name: string;
  /** The sizes written, in order; the first is the create. */
  sizes: number[];
  deleted: boolean;
}

/** The verdict on a ledger against what the test did. */
export interface LedgerVerdict {
  /** Changes the test made (creates, size changes, deletes). */
  changesMade: number;
  /** Of those, the ones whose final state was handled (see {@link checkLedger}). */
  changesHandled: number;
  /** Objects whose latest state (or deletion) was never handled. */
  lost: string[];
  /** Completed runs for a state that was never written. */
  phantom: string[];
  /** Completed runs repeated for the same object, kind and size. */
  duplicates: number;
}

/**
 * Checks the promises the chaos suite makes: for every object the latest size was handled (a
 * create or update run completed with it) and a deleted object's deletion was handled; no run
 * handled a size the test never wrote. Intermediate sizes may be skipped (Kopf semantics: the
 * latest state wins), so they count as handled when the latest is.
 */
export function checkLedger(
  entries: readonly LedgerEntry[],
  expected: readonly ExpectedObject[],
): LedgerVerdict {
  const done = entries.filter((e) => e.at === 'done');
  const verdict: LedgerVerdict = {
    changesMade: 0,
    changesHandled: 0,
    lost: [],
    phantom: [],
    duplicates: 0,
  };
  for (const object of expected) {
    const made = object.sizes.length + (object.deleted ? 1 : 0);
    verdict.changesMade += made;
    const runs = done.filter((e) => e.name === object.name);
    const latest = object.sizes[object.sizes.length - 1];
    const latestHandled = runs.some(
      (e) => (e.kind === 'create' || e.kind === 'update') && e.size === latest,
    );
    const deletionHandled = !object.deleted || runs.some((e) => e.kind === 'delete');
    if (latestHandled && deletionHandled) verdict.changesHandled += made;
    else
      verdict.lost.push(
        `${object.name}: ${!latestHandled ? `size ${latest} never handled` : 'deletion never handled'}`,
      );
    for (const run of runs) {
      if (run.kind !== 'delete' && !object.sizes.includes(run.size as number))
        verdict.phantom.push(`${object.name}: ${run.kind} of size ${run.size}`);
    }
    const keys = runs.map((e) => `${e.kind}:${e.size}`);
    verdict.duplicates += keys.length - new Set(keys).size;
  }
  return verdict;
}

/**
 * Intervals where runs from two different processes overlapped (two active operators at once); with
 * `sameObject`, only runs of one object (replicas that share objects out may work side by side).
 */
export function concurrentRuns(
  entries: readonly LedgerEntry[],
  { sameObject = false }: { sameObject?: boolean } = {},
): string[] {
  const runs: { pid: number; uid: string; start: number; end: number; what: string }[] = [];
  const open = new Map<string, LedgerEntry>();
  for (const entry of entries) {
    const key = `${entry.pid}/${entry.kind}/${entry.uid}/${entry.size}`;
    if (entry.at === 'start') open.set(key, entry);
    else {
      const start = open.get(key);
      if (start)
        runs.push({
          pid: entry.pid,
          uid: entry.uid,
          start: start.time,
          end: entry.time,
          what: `${entry.kind} ${entry.name}`,
        });
      open.delete(key);
    }
  }
  const overlaps: string[] = [];
  for (const a of runs) {
    for (const b of runs) {
      if (sameObject && a.uid !== b.uid) continue;
      if (a.pid < b.pid && a.start < b.end && b.start < a.end)
        overlaps.push(`pid ${a.pid} (${a.what}) and pid ${b.pid} (${b.what})`);
    }
  }
  return overlaps;
}

/** Makes changes to widgets and remembers them as {@link ExpectedObject}s, for {@link checkLedger}. */
export class TrackedChanges {
  readonly expected = new Map<string, ExpectedObject>();

  /** @param widgets where changes go unless a call names another client (say, a peer API server's). */
  constructor(
    private readonly ledger: string,
    private readonly widgets: Widgets,
  ) {}

  async create(name: string, size: number, via: Widgets = this.widgets): Promise<void> {
    await via.create(name, { size });
    this.expected.set(name, { name, sizes: [size], deleted: false });
  }

  async resize(name: string, size: number, via: Widgets = this.widgets): Promise<void> {
    await via.patchSpec(name, { size });
    this.expected.get(name)!.sizes.push(size);
  }

  async remove(name: string, via: Widgets = this.widgets): Promise<void> {
    await via.delete(name);
    this.expected.get(name)!.deleted = true;
  }

  verdict(): LedgerVerdict {
    return checkLedger(readLedger(this.ledger), [...this.expected.values()]);
  }
}
