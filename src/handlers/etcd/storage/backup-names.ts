/**
 * Names of periodic backups, identical to the original operator's
 * (`<path>_v<revision>_<UTC 2006-01-02-15:04:05>`) so existing tooling and retention find them.
 */

/** A parsed periodic backup name. */
export interface ParsedBackupName {
  /** etcd revisions are int64, beyond `Number.MAX_SAFE_INTEGER` in principle. */
  revision: bigint;
  /** Whole seconds, UTC. */
  at: Date;
}

const SUFFIX = /^(\d+)_(\d{4})-(\d{2})-(\d{2})-(\d{2}):(\d{2}):(\d{2})$/;

/** `<prefix>_v<revision>_<yyyy-MM-dd-HH:mm:ss UTC>`, the name of the periodic backup of `revision` taken at `at`. */
export function periodicBackupName(
  prefix: string,
  revision: number | bigint | string,
  at: Date,
): string {
  const text = String(revision);
  if (!/^\d+$/.test(text))
    throw new Error(`backup revision must be a non-negative integer, got ${JSON.stringify(text)}`);
  if (Number.isNaN(at.getTime())) throw new Error('backup time is an invalid Date');
  const two = (n: number): string => String(n).padStart(2, '0');
  const stamp =
    `${String(at.getUTCFullYear()).padStart(4, '0')}-${two(at.getUTCMonth() + 1)}-${two(at.getUTCDate())}` +
    `-${two(at.getUTCHours())}:${two(at.getUTCMinutes())}:${two(at.getUTCSeconds())}`;
  return `${prefix}_v${text}_${stamp}`;
}

/** The revision and time in `name` when it is a periodic backup name for exactly `prefix`; otherwise undefined. */
export function parseBackupName(prefix: string, name: string): ParsedBackupName | undefined {
  const head = `${prefix}_v`;
  if (!name.startsWith(head)) return undefined;
  const match = SUFFIX.exec(name.slice(head.length));
  if (!match) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(2).map(Number);
  const at = new Date(Date.UTC(year!, month! - 1, day!, hour!, minute!, second!));
  // Date.UTC rolls over (month 13 → next year); a name that does not round-trip is not ours.
  if (Number.isNaN(at.getTime()) || periodicBackupName(prefix, match[1]!, at) !== name)
    return undefined;
  return { revision: BigInt(match[1]!), at };
}

/**
 * The periodic backups of `prefix` to delete so that `maxBackups` remain: newest first by time,
 * then revision. Not by name, which is what the original did: revisions are not zero-padded, so
 * when one gains a digit (`_v99_` → `_v100_`) the newest sorted last and was deleted.
 * Names that do not parse (the one-shot object, other files) are never returned; `maxBackups <= 0` keeps all.
 */
export function backupsToDelete(
  prefix: string,
  names: readonly string[],
  maxBackups: number,
): string[] {
  if (!(maxBackups > 0)) return [];
  const parsed = [...new Set(names)].flatMap((name) => {
    const p = parseBackupName(prefix, name);
    return p ? [{ name, ...p }] : [];
  });
  parsed.sort(
    (a, b) =>
      b.at.getTime() - a.at.getTime() ||
      (a.revision === b.revision ? 0 : a.revision < b.revision ? 1 : -1) ||
      // Only for a stable result; equal time and revision means the same snapshot.
      (a.name === b.name ? 0 : a.name < b.name ? 1 : -1),
  );
  return parsed.slice(Math.floor(maxBackups)).map((p) => p.name);
}
