/**
 * Reading bookkeeping from both places (pure): the configured storage first, then the other, so an
 * operator switched from one storage to the other finds what it wrote before and re-runs nothing.
 * Writes go to the configured place only, so after a switch both places may hold a record: the rules
 * below say which one counts.
 */
import type { KubeObject } from '../objects/kube-object.js';
import { parseDiffBase, type Essence } from './essence.js';
import type { Identity } from './identity.js';
import { changeTag, parseProgress, type ProgressRecord } from './progress.js';
import {
  DIFF_BASE,
  otherStorage,
  storedText,
  type BookkeepingItem,
  type Storage,
} from './storage.js';

/** A stored record that is unusable: where, its text, and why. Reported once, then treated as absent. */
export interface BookkeepingProblem {
  place: Storage;
  item: BookkeepingItem;
  /** The stored text (empty when the problem is the shape around it). */
  raw: string;
  problem: string;
}

/** The diff-base that counts, and what else was found. */
export interface DiffBaseChoice {
  /** The handled essence; undefined when there is none that is this object's own (a create). */
  essence?: Essence;
  /** Its stored text: what the change tag is made from. */
  raw?: string;
  /** Where it was found. */
  place?: Storage;
  /** The uid of a diff-base written for another object (copied with this one), when no own one was found. */
  foreign?: string;
  problems: BookkeepingProblem[];
  /** The stored text in each place, usable or not: what a write compares with and removes. */
  stored: Partial<Record<Storage, string>>;
}

/**
 * The diff-base of `object`: the usable one when only one place has one; when both do, the one that
 * names the other's change tag as the one it `supersedes` (written later), else the configured one.
 */
export function chooseDiffBase(
  object: KubeObject,
  identity: Identity,
  storage: Storage,
): DiffBaseChoice {
  const choice: DiffBaseChoice = { problems: [], stored: {} };
  const usable: Array<{ place: Storage; raw: string; essence: Essence; supersedes?: string }> = [];
  for (const place of [storage, otherStorage(storage)]) {
    const text = storedText(object, identity, place, DIFF_BASE);
    if (text.problem !== undefined) {
      choice.problems.push({ place, item: DIFF_BASE, raw: '', problem: text.problem });
      continue;
    }
    if (text.raw === undefined) continue;
    choice.stored[place] = text.raw;
    const reading = parseDiffBase(text.raw, object.metadata?.uid);
    if (reading.problem !== undefined)
      choice.problems.push({ place, item: DIFF_BASE, raw: text.raw, problem: reading.problem });
    else if (reading.foreign !== undefined) choice.foreign ??= reading.foreign;
    else if (reading.essence !== undefined)
      usable.push({
        place,
        raw: text.raw,
        essence: reading.essence,
        supersedes: reading.supersedes,
      });
  }
  const [first, second] = usable;
  const chosen =
    second !== undefined && second.supersedes === changeTag(first!.raw) ? second : first;
  if (chosen !== undefined) {
    choice.essence = chosen.essence;
    choice.raw = chosen.raw;
    choice.place = chosen.place;
    choice.foreign = undefined;
  }
  return choice;
}

/** A handler's progress record that counts, and what else was found. */
export interface ProgressChoice {
  record?: ProgressRecord;
  place?: Storage;
  problems: BookkeepingProblem[];
  /** The stored text in each place, usable or not. */
  stored: Partial<Record<Storage, string>>;
}

/**
 * A handler's record: of the usable ones, those that `belong` to the current change first; among
 * them the one of the latest run (`started`), then a finished one, then the one with more attempts
 * (a record only ever moves forward within a change), then the configured place's.
 */
export function chooseProgress(
  object: KubeObject,
  identity: Identity,
  storage: Storage,
  handlerId: string,
  belongs: (record: ProgressRecord) => boolean = () => true,
): ProgressChoice {
  const item: BookkeepingItem = { handlerId };
  const choice: ProgressChoice = { problems: [], stored: {} };
  let best: { place: Storage; record: ProgressRecord } | undefined;
  for (const place of [storage, otherStorage(storage)]) {
    const text = storedText(object, identity, place, item);
    if (text.problem !== undefined) {
      choice.problems.push({ place, item, raw: '', problem: text.problem });
      continue;
    }
    if (text.raw === undefined) continue;
    choice.stored[place] = text.raw;
    const reading = parseProgress(text.raw);
    if (reading.problem !== undefined) {
      choice.problems.push({ place, item, raw: text.raw, problem: reading.problem });
    } else if (
      reading.record !== undefined &&
      (best === undefined || isAhead(reading.record, best.record, belongs))
    ) {
      best = { place, record: reading.record };
    }
  }
  if (best !== undefined) {
    choice.record = best.record;
    choice.place = best.place;
  }
  return choice;
}

/** The record under the first of `ids` that has one: a handler's own id, then the ids an earlier release stored it under. */
export function chooseProgressUnder(
  ids: readonly string[],
  object: KubeObject,
  identity: Identity,
  storage: Storage,
  belongs?: (record: ProgressRecord) => boolean,
): ProgressChoice {
  let first: ProgressChoice | undefined;
  for (const id of ids) {
    const choice = chooseProgress(object, identity, storage, id, belongs);
    if (choice.record !== undefined) return choice;
    first ??= choice;
  }
  return first ?? { problems: [], stored: {} };
}

/** Whether `candidate` (read second) counts over `current`: see {@link chooseProgress}. */
function isAhead(
  candidate: ProgressRecord,
  current: ProgressRecord,
  belongs: (record: ProgressRecord) => boolean,
): boolean {
  const order = [
    Number(belongs(candidate)) - Number(belongs(current)),
    compareTimes(candidate.started, current.started),
    Number(isDone(candidate)) - Number(isDone(current)),
    (candidate.retries ?? 0) - (current.retries ?? 0),
  ];
  return (order.find((value) => value !== 0) ?? 0) > 0;
}

function isDone(record: ProgressRecord): boolean {
  return record.success === true || record.failure === true;
}

function compareTimes(a: string | undefined, b: string | undefined): number {
  const left = a === undefined ? Number.NEGATIVE_INFINITY : Date.parse(a);
  const right = b === undefined ? Number.NEGATIVE_INFINITY : Date.parse(b);
  return Math.sign(left - right) || 0;
}
