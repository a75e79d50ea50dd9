/**
 * Which fields of an etcd.database.coreos.com/v1beta2 object the operator keeps but does not act on.
 *
 * The CRDs (crds/etcd.database.coreos.com.yaml) accept every field of coreos/etcd-operator's API: the
 * ones the operator acts on are typed there, and each spec (and its nested blocks) keeps all others as
 * written. {@link SUPPORTED_FIELDS} mirrors that schema, less `spec.TLS`, which the schema keeps for
 * compatibility but nothing reads; a spec checks that the two agree.
 */

/**
 * The fields the operator acts on, below one spec: `true` is a field acted on as a whole (whatever it
 * holds), an object lists the fields acted on in an object (every other one is ignored), and a
 * one-element array applies its shape to each item of a list.
 */
export type Supported = true | { readonly [field: string]: Supported } | readonly [Supported];

/** The kinds whose specs {@link ignoredFields} checks. */
export type EtcdKind = 'EtcdCluster' | 'EtcdBackup' | 'EtcdRestore';

const s3 = { path: true, awsSecret: true, endpoint: true, forcePathStyle: true } as const;
const local = { path: true } as const;

/** Per kind, the `spec` fields the operator acts on (see {@link Supported}). */
export const SUPPORTED_FIELDS: Readonly<Record<EtcdKind, Supported>> = {
  EtcdCluster: {
    size: true,
    repository: true,
    version: true,
    paused: true,
    pod: { labels: true, annotations: true, nodeSelector: true, resources: true, tolerations: true, affinity: true, etcdEnv: true, securityContext: true },
  },
  EtcdBackup: {
    etcdEndpoints: true,
    storageType: true,
    backupPolicy: { timeoutInSecond: true, backupIntervalInSecond: true, maxBackups: true },
    s3,
    local,
  },
  EtcdRestore: {
    etcdCluster: true,
    backupStorageType: true,
    s3,
    local,
  },
};

/**
 * Ignored fields set to the value upstream defaults to, which is also what this operator does: not
 * worth a warning. Keyed by path with list indices as `[]`.
 */
const HARMLESS: Readonly<Record<EtcdKind, Readonly<Record<string, unknown>>>> = {
  EtcdCluster: { 'spec.pod.antiAffinity': false },
  EtcdBackup: {},
  EtcdRestore: {},
};

/** What an ignored field means for the user, where that is not obvious. */
const CONSEQUENCES: Readonly<Record<string, string>> = {
  'spec.TLS': 'members and clients talk plain HTTP',
  'spec.pod.antiAffinity': 'use spec.pod.affinity',
  'spec.pod.persistentVolumeClaimSpec': 'member data is on an emptyDir volume',
  'spec.clientTLSSecret': 'the backup talks plain HTTP to etcd',
};

/** Unset in upstream's Go types (`omitempty`): nothing to ignore. */
function unset(value: unknown): boolean {
  return value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]{0,62}$/;

/** `parent.key`, or `parent["key"]` for a key that is not a plain name (clipped, so a hostile key stays short). */
function child(parent: string, key: string): string {
  if (PLAIN_KEY.test(key)) return `${parent}.${key}`;
  const shown = key.length > 40 ? `${key.slice(0, 40)}...` : key;
  return `${parent}[${JSON.stringify(shown)}]`;
}

function walk(value: unknown, supported: Supported, path: string, harmless: Readonly<Record<string, unknown>>, out: string[]): void {
  if (supported === true) return;
  if (Array.isArray(supported)) {
    if (Array.isArray(value)) value.forEach((item, index) => walk(item, supported[0] as Supported, `${path}[${index}]`, harmless, out));
    return;
  }
  // A value of the wrong type is the schema's to refuse; nothing below it can be reported sensibly.
  if (!isObject(value)) return;
  const fields = supported as { readonly [field: string]: Supported };
  for (const [key, field] of Object.entries(value)) {
    if (unset(field)) continue;
    const at = child(path, key);
    if (Object.hasOwn(fields, key)) {
      walk(field, fields[key]!, at, harmless, out);
      continue;
    }
    const pattern = at.replace(/\[\d+\]/g, '[]');
    if (Object.hasOwn(harmless, pattern) && harmless[pattern] === field) continue;
    out.push(at);
  }
}

/**
 * The paths (`spec.TLS`, `spec.pod.antiAffinity`) of the fields `spec` sets that the operator keeps
 * but does not act on, in the order they appear; empty when there are none. Fields that are unset in
 * upstream's sense (null, `""`, `[]`) and ignored fields set to upstream's default where the operator
 * behaves the same are not listed. Pure; `spec` is untrusted.
 */
export function ignoredFields(kind: EtcdKind, spec: unknown): string[] {
  const out: string[] = [];
  walk(spec, SUPPORTED_FIELDS[kind], 'spec', HARMLESS[kind], out);
  return out;
}

/** The Event reason for accepted-but-ignored fields. */
export const IGNORED_FIELDS_REASON = 'IgnoredFields';

/** Characters of the path list in a message; the rest is counted, so the advice at the end always fits an Event. */
const LISTED_CHARACTERS = 600;

/** The Event message naming `paths` (from {@link ignoredFields}), what they mean, and what to do about them. */
export function ignoredFieldsMessage(kind: EtcdKind, paths: readonly string[], generation?: number): string {
  const listed: string[] = [];
  let length = 0;
  for (const path of paths) {
    const shown = CONSEQUENCES[path] === undefined ? path : `${path} (${CONSEQUENCES[path]})`;
    if (listed.length > 0 && length + shown.length + 2 > LISTED_CHARACTERS) break;
    listed.push(shown);
    length += shown.length + 2;
  }
  const more = paths.length - listed.length;
  const list = listed.join(', ') + (more > 0 ? ` and ${more} more` : '');
  const which = generation === undefined ? `this ${kind}` : `this ${kind} (generation ${generation})`;
  const one = paths.length === 1;
  return (
    `${which} sets ${paths.length} ${one ? 'field' : 'fields'} that Konductor keeps but does not act on: ${list}. ` +
    `${one ? 'It has' : 'They have'} no effect here; remove ${one ? 'it' : 'them'} (docs/upstream-compatibility.md lists what is supported).`
  );
}
