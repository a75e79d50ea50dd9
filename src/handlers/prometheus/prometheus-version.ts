/**
 * The Prometheus version a Prometheus object deploys (`spec.version`), which decides what its
 * configuration may contain: the label-name rule (2.x: legacy names only; 3.x: any UTF-8),
 * EndpointSlice discovery (≥ 2.21), role selectors (≥ 2.17), `honor_timestamps` (≥ 2.9).
 */
import type { PrometheusSpec } from './types.js';

/** The version deployed when `spec.version` is unset (the default image tag). */
export const DEFAULT_PROMETHEUS_VERSION = 'v2.42.0';

/** A parsed semantic version; a build suffix is ignored. */
export interface PrometheusVersion {
  major: number;
  minor: number;
  patch: number;
  /** `-rc.0` and the like: such a version comes before the release of the same numbers. */
  prerelease: boolean;
}

const VERSION = /^v?(\d{1,9})\.(\d{1,9})\.(\d{1,9})(-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

/** `v2.42.0`, `2.42.0`, `v3.0.0-rc.0` → its numbers; `undefined` for anything else (`latest`, `2.42`). */
export function parseVersion(text: string): PrometheusVersion | undefined {
  const match = VERSION.exec(text);
  if (match === null) return undefined;
  return {
    major: Number(match[1]),
    minor: Number(match[2]),
    patch: Number(match[3]),
    prerelease: match[4] !== undefined,
  };
}

/** Why `spec.version` is not a Prometheus version, or `undefined` (also when unset). */
export function versionProblem(spec: PrometheusSpec): string | undefined {
  const version = spec.version;
  if (version === undefined || version === '') return undefined;
  if (typeof version !== 'string' || parseVersion(version) === undefined) {
    return `spec.version: ${JSON.stringify(version)} is not a Prometheus version (e.g. v2.42.0)`;
  }
  return undefined;
}

/** The version `spec` deploys: `spec.version`, else {@link DEFAULT_PROMETHEUS_VERSION}. An unparseable one counts as the default (it is refused by validation first). */
export function prometheusVersion(spec: PrometheusSpec): PrometheusVersion {
  const parsed =
    typeof spec.version === 'string' && spec.version !== ''
      ? parseVersion(spec.version)
      : undefined;
  return parsed ?? (parseVersion(DEFAULT_PROMETHEUS_VERSION) as PrometheusVersion);
}

/** Whether `version` is at least the release `major.minor.patch`, in semver order (`3.0.0-rc.0` is not 3.0.0 yet). */
export function atLeast(
  version: PrometheusVersion,
  major: number,
  minor: number,
  patch = 0,
): boolean {
  if (version.major !== major) return version.major > major;
  if (version.minor !== minor) return version.minor > minor;
  if (version.patch !== patch) return version.patch > patch;
  return !version.prerelease;
}

/** Whether `version` validates label names with the UTF-8 rule (3.0 and later) rather than the legacy one. */
export function allowsUtf8LabelNames(version: PrometheusVersion): boolean {
  return atLeast(version, 3, 0, 0);
}
