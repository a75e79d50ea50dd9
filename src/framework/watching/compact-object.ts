// What the watch stream does to each parsed object before it stores and delivers it, so that an
// operator watching 100,000 objects holds each in as little heap as its content allows.
import type { KubeObject } from '../objects/kube-object.js';

/**
 * The strings every object of one watched resource carries (its apiVersion and kind), and optionally a
 * table that makes objects which have never been seen before share their namespace and creation time
 * with the objects listed or created alongside them.
 */
export interface ResourceStrings {
  apiVersion: string;
  kind: string;
  table?: StringTable;
  /** Label values met: a table of their own, so values unique to each object do not flush `table`. */
  labelValues?: StringTable;
}

/**
 * Equal strings met again, returned as the copy met first. A listing of 100,000 objects in one namespace
 * otherwise holds 100,000 copies of the namespace's name (measured: 41 bytes per stored object) and one
 * creation time per object although objects created in the same second share it (another ~30 bytes).
 * Bounded: past `limit` entries it starts afresh, so a stream of distinct values cannot grow it.
 */
export class StringTable {
  private readonly seen = new Map<string, string>();

  constructor(private readonly limit = 4_096) {}

  /** Distinct strings held now. */
  get size(): number {
    return this.seen.size;
  }

  intern(value: string): string {
    const known = this.seen.get(value);
    if (known !== undefined) return known;
    if (this.seen.size >= this.limit) this.seen.clear();
    this.seen.set(value, value);
    return value;
  }
}

/**
 * Makes `object` (just parsed from a watch line or a listed page) share the strings it has in common
 * with its resource and with `previous` (the version of it the stream holds), instead of carrying its
 * own copies. JSON.parse makes a new string for every value, so without this every stored object and
 * every version of it had its own `apiVersion`, `kind`, `uid`, `creationTimestamp` and name (measured:
 * about 190 bytes per object, 40 % of a small object's JSON). Values are only replaced by equal ones;
 * the object's shape does not change. Fills in a missing apiVersion and kind (list items of built-in
 * resources lack them).
 */
export function shareStrings(
  object: KubeObject,
  previous: KubeObject | undefined,
  resource: ResourceStrings,
): void {
  if (object.apiVersion === undefined || object.apiVersion === resource.apiVersion)
    object.apiVersion = resource.apiVersion;
  if (object.kind === undefined || object.kind === resource.kind) object.kind = resource.kind;
  const metadata = object.metadata;
  const before = previous?.metadata;
  if (!metadata) return;
  shareLabelValues(metadata.labels, before?.labels, resource.labelValues);
  if (!before) {
    const table = resource.table;
    if (table === undefined) return;
    if (typeof metadata.namespace === 'string')
      metadata.namespace = table.intern(metadata.namespace);
    if (typeof metadata.creationTimestamp === 'string')
      metadata.creationTimestamp = table.intern(metadata.creationTimestamp);
    return;
  }
  if (metadata.uid === before.uid) metadata.uid = before.uid;
  if (metadata.name === before.name) metadata.name = before.name;
  if (metadata.namespace === before.namespace) metadata.namespace = before.namespace;
  if (metadata.creationTimestamp === before.creationTimestamp)
    metadata.creationTimestamp = before.creationTimestamp;
}

/**
 * Label values repeat across a fleet (an app's name, a shard label naming its member on every object
 * of a shard: 32 bytes per object measured), so each is the copy met first: the previous version's, or
 * the table's. Keys need nothing: JSON.parse already shares property names.
 */
function shareLabelValues(
  labels: Record<string, string> | undefined,
  before: Record<string, string> | undefined,
  table: StringTable | undefined,
): void {
  if (typeof labels !== 'object' || labels === null) return;
  for (const key of Object.keys(labels)) {
    const value = labels[key];
    if (typeof value !== 'string') continue;
    const known = before?.[key];
    if (known === value) labels[key] = known;
    else if (table !== undefined) labels[key] = table.intern(value);
  }
}
