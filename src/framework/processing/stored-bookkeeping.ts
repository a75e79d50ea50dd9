import type { Resource } from '../api/resource.js';
import type { ChangeHandlerSpec } from '../intents/handler-specs.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import type { EventPoster } from '../posting/events.js';
import {
  chooseDiffBase,
  chooseProgressUnder,
  type BookkeepingProblem,
  type DiffBaseChoice,
} from '../state/bookkeeping.js';
import type { Identity } from '../state/identity.js';
import type { ProgressRecord } from '../state/progress.js';
import { itemLocation, type Storage } from '../state/storage.js';
import type { ObjectMemory } from './object-memory.js';
import { recordForChange, type Change } from './progression.js';
import { warnInvalidRecord, type WarningSink } from './warnings.js';

/**
 * The bookkeeping a change processor reads from objects (diff-base, handler progress), checked, with
 * what is wrong reported once per object; and where it writes it, which falls back from status to
 * annotations when the API server drops the status field.
 */
export class StoredBookkeeping {
  /** Where bookkeeping is written; status storage falls back to annotations when the API server drops it. */
  storage: Storage;

  constructor(
    private readonly resource: Resource,
    private readonly identity: Identity,
    private readonly logger: Logger,
    private readonly poster: EventPoster,
    storage: Storage | undefined,
  ) {
    this.storage = storage === 'status' && resource.hasStatus ? 'status' : 'annotations';
  }

  /** Status storage is impossible on this resource (its schema drops `status["<identity>"]`): said once, loudly. */
  fallBackToAnnotations(): void {
    if (this.storage === 'annotations') return; // another object's write found it first
    this.storage = 'annotations';
    const { group, version, plural } = this.resource;
    this.logger.error(
      { resource: `${plural}.${group}/${version}`, field: `status["${this.identity.statusKey}"]` },
      `the API server dropped status["${this.identity.statusKey}"] from ${plural}.${group}: its status schema does not keep unknown fields, ` +
        'so status storage cannot work there; the diff-base and progress of this resource go to annotations from now on. ' +
        `To keep them in the status, add 'x-kubernetes-preserve-unknown-fields: true' under status in the CRD's schema (or declare status["${this.identity.statusKey}"])`,
    );
  }

  /** The object's diff-base from either place, checked: an unusable or another object's diff-base counts as none (a create). */
  diffBaseOf(body: KubeObject, memory: ObjectMemory): DiffBaseChoice {
    const choice = chooseDiffBase(body, this.identity, this.storage);
    this.warnProblems(
      body,
      memory,
      choice.problems,
      'it is ignored and the object is handled as new',
    );
    if (choice.essence === undefined && choice.foreign !== undefined) {
      const meta = body.metadata ?? {};
      this.logger.info(
        { namespace: meta.namespace, name: meta.name, diffBaseUid: choice.foreign },
        `the diff-base ${this.identity.diffBaseKey} was written for another object (uid ${choice.foreign}), copied with this one; handling the object as new`,
      );
    }
    return choice;
  }

  /** A handler's stored progress from either place, checked: an unusable record counts as none, reported once. */
  progressOf(
    body: KubeObject,
    handler: ChangeHandlerSpec,
    change: Change,
    memory: ObjectMemory,
  ): ProgressRecord | undefined {
    const choice = chooseProgressUnder(
      [handler.id, ...(handler.legacyIds ?? [])],
      body,
      this.identity,
      this.storage,
      (record) => recordForChange(handler, record, change) !== undefined,
    );
    this.warnProblems(
      body,
      memory,
      choice.problems,
      `it is ignored and ${handler.id} runs as if it had no progress`,
    );
    return choice.record;
  }

  private warnProblems(
    body: KubeObject,
    memory: ObjectMemory,
    problems: readonly BookkeepingProblem[],
    consequence: string,
  ): void {
    for (const { place, item, raw, problem } of problems) {
      warnInvalidRecord(
        this.warnings(memory),
        body,
        itemLocation(this.identity, place, item),
        raw,
        problem,
        consequence,
      );
    }
  }

  warnings(memory: ObjectMemory): WarningSink {
    return { memory, logger: this.logger, poster: this.poster };
  }
}
