/**
 * Where the chaos suite's operators keep their bookkeeping (diff-base and handler progress), and how a
 * test reads it back wherever it is kept.
 *
 * `CHAOS_STORAGE=status` runs every chaos scenario with status storage (`status["konductor.dev"]`,
 * written in the handlers' own status PATCH); unset or `annotations`, they run with the default
 * (annotations). Any other value fails at once. The scenarios that restart the operator or the API
 * server most (operator-kills, api-server-restart) also run once with status storage in every run.
 *
 *   CHAOS_STORAGE=status npm run -s test:integration -- test/integration/chaos
 */
import {
  DIFF_BASE,
  parseStorage,
  STATUS_PROGRESS_FIELD,
  storedText,
  STORAGES,
  type Storage,
} from '../../../src/framework/state/storage.js';
import { Identity } from '../../../src/framework/state/identity.js';
import type { Widget } from '../widgets.js';

export type { Storage };

/** The storage the chaos suite runs with: `CHAOS_STORAGE`, or the framework's default. */
export function chaosStorage(): Storage {
  const raw = process.env.CHAOS_STORAGE;
  return raw === undefined || raw === '' ? 'annotations' : parseStorage(raw);
}

/** A scenario's name for the chaos summary: as it is with the default storage, else with the storage named. */
export function scenarioName(scenario: string, storage: Storage): string {
  return storage === 'annotations' ? scenario : `${scenario} (${storage} storage)`;
}

/**
 * The `spec.size` the widget's diff-base records, from whichever place holds one (both are read, as
 * the operator reads both); undefined when there is none or it cannot be read.
 */
export function recordedSize(widget: Widget): number | undefined {
  for (const place of STORAGES) {
    const { raw } = storedText(widget, Identity.DEFAULT, place, DIFF_BASE);
    if (raw === undefined) continue;
    try {
      const size = (JSON.parse(raw) as { spec?: { size?: unknown } }).spec?.size;
      if (typeof size === 'number') return size;
    } catch {
      // A corrupt diff-base shows up as a lost or phantom run.
    }
  }
  return undefined;
}

/**
 * Handler progress records left on the widget, in either place: annotations of ours other than the
 * diff-base, and entries of `status["konductor.dev"].progress`. A settled object has none.
 */
export function progressRecords(widget: Widget): string[] {
  const identity = Identity.DEFAULT;
  const annotations = Object.keys(widget.metadata?.annotations ?? {}).filter(
    (key) => key.startsWith(`${identity.prefix}/`) && key !== identity.diffBaseKey,
  );
  const section: unknown = (widget.status as Record<string, unknown> | undefined)?.[
    identity.statusKey
  ];
  const progress: unknown =
    typeof section === 'object' && section !== null
      ? (section as Record<string, unknown>)[STATUS_PROGRESS_FIELD]
      : undefined;
  const inStatus =
    typeof progress === 'object' && progress !== null
      ? Object.entries(progress)
          .filter(([, value]) => value !== null)
          .map(([name]) => `status["${identity.statusKey}"].${STATUS_PROGRESS_FIELD}["${name}"]`)
      : [];
  return [...annotations, ...inStatus];
}
