import { existsSync, readFileSync, readdirSync, accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { join, delimiter } from 'node:path';

/** Paths of the programs a test control plane runs. */
export interface ControlPlaneBinaries {
  /** The etcd binary. */
  etcd: string;
  /** The kube-apiserver binary. */
  kubeApiserver: string;
  /**
   * kube-controller-manager, run only by a plane started with `controllerManager: true`; when that
   * option is on and this is not given, it is found from `KONDUCTOR_KUBE_CONTROLLER_MANAGER`,
   * `KUBEBUILDER_ASSETS`, then the cache `scripts/provision.sh` fills (never `PATH`).
   */
  kubeControllerManager?: string;
}

/** Whether `path` is a file this process may execute. */
export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The first executable `name` in a `PATH` folder. */
export function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, name);
    if (dir && isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/** The per-user cache folder where `scripts/provision.sh` keeps the built kube-apiserver. */
export function cacheRoot(): string {
  return (
    process.env.KONDUCTOR_CACHE_DIR ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'konductor')
  );
}

/** What `scripts/provision.sh` recorded in the cache (`binaries.json`); empty when absent or unreadable. */
function recordedBinaries(): Partial<Required<ControlPlaneBinaries> & { kubectl: string }> {
  const recordFile = join(cacheRoot(), 'binaries.json');
  if (!existsSync(recordFile)) return {};
  try {
    const parsed: unknown = JSON.parse(readFileSync(recordFile, 'utf8'));
    return typeof parsed === 'object' && parsed !== null
      ? (parsed as Partial<Required<ControlPlaneBinaries> & { kubectl: string }>)
      : {};
  } catch {
    // A corrupt record is ignored; the other sources still apply.
    return {};
  }
}

/**
 * Finds etcd and kube-apiserver, in this order: explicit overrides
 * (`KONDUCTOR_ETCD`, `KONDUCTOR_KUBE_APISERVER`), envtest's `KUBEBUILDER_ASSETS` folder,
 * what `scripts/provision.sh` recorded in the cache, then `PATH`.
 * Throws with the command that fixes it when one is missing.
 */
export function resolveBinaries(): ControlPlaneBinaries {
  const recorded = recordedBinaries();
  const etcd = pick(process.env.KONDUCTOR_ETCD, 'etcd', recorded.etcd);
  const kubeApiserver = pick(
    process.env.KONDUCTOR_KUBE_APISERVER,
    'kube-apiserver',
    recorded.kubeApiserver,
  );
  const missing = [!etcd && 'etcd', !kubeApiserver && 'kube-apiserver'].filter(Boolean);
  if (!etcd || !kubeApiserver) {
    throw new Error(
      `test control plane: ${missing.join(' and ')} not found. Run 'bash node_modules/konductor/scripts/provision.sh' ('npm run provision' in konductor's own repository; it builds and caches them), ` +
        `or set KUBEBUILDER_ASSETS to a folder holding both, or KONDUCTOR_ETCD / KONDUCTOR_KUBE_APISERVER.`,
    );
  }
  return { etcd, kubeApiserver };
}

/**
 * The etcd {@link resolveBinaries} picks, found the same way; undefined when there is none. For test
 * support that runs etcd processes of its own next to a control plane's.
 */
export function findEtcd(): string | undefined {
  return pick(process.env.KONDUCTOR_ETCD, 'etcd', recordedBinaries().etcd);
}

/** A control plane program: the override (which must be executable), envtest's assets folder, the record, then `PATH`. */
function pick(
  override: string | undefined,
  asset: string,
  record: string | undefined,
): string | undefined {
  if (override) {
    if (!isExecutable(override))
      throw new Error(
        `${override} is not an executable file; fix the override variable or unset it`,
      );
    return override;
  }
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (assets && isExecutable(join(assets, asset))) return join(assets, asset);
  if (record && isExecutable(record)) return record;
  return onPath(asset);
}

/** The newest `<cache>/<name>/<version>/<name>` provision.sh left, if any. */
function cached(name: string): string | undefined {
  const root = join(cacheRoot(), name);
  let versions: string[];
  try {
    versions = readdirSync(root);
  } catch {
    return undefined;
  }
  const newestFirst = versions.sort((a, b) => b.localeCompare(a, 'en', { numeric: true }));
  return newestFirst.map((version) => join(root, version, name)).find(isExecutable);
}

/**
 * Finds the kubectl the compatibility specs apply manifests with, in this order: the
 * `KONDUCTOR_KUBECTL` override, envtest's `KUBEBUILDER_ASSETS` folder, what `scripts/provision.sh`
 * recorded in the cache, then the newest kubectl in the cache's `kubectl/<version>/` folders (Debian's
 * kubernetes-client, the same version as the test control plane). Never `PATH`: a kubectl found there is often several minor versions away from
 * the 1.20 control plane, and kubectl's validation differs between versions.
 * Throws with the command that fixes it when none is found.
 */
export function resolveKubectl(): string {
  const override = process.env.KONDUCTOR_KUBECTL;
  if (override) {
    if (!isExecutable(override))
      throw new Error(`${override} is not an executable file; fix KONDUCTOR_KUBECTL or unset it`);
    return override;
  }
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (assets && isExecutable(join(assets, 'kubectl'))) return join(assets, 'kubectl');
  const recorded = recordedBinaries().kubectl;
  if (typeof recorded === 'string' && isExecutable(recorded)) return recorded;
  const unpacked = cached('kubectl');
  if (unpacked) return unpacked;
  throw new Error(
    "kubectl for the test control plane not found. Run 'npm run provision' (it downloads Debian's kubernetes-client, the control plane's version, into the cache), " +
      'or set KONDUCTOR_KUBECTL to a kubectl binary.',
  );
}

/**
 * Finds the kube-controller-manager a plane started with `controllerManager: true` runs, in this order:
 * the `KONDUCTOR_KUBE_CONTROLLER_MANAGER` override, envtest's `KUBEBUILDER_ASSETS` folder, what
 * `scripts/provision.sh` recorded in the cache, then the newest build in the cache's
 * `kube-controller-manager/<version>/` folders. Never `PATH`: a controller manager newer than the
 * 1.20 API server is unsupported (it may call APIs the server lacks).
 * Throws one line naming the script that builds it when none is found.
 */
export function resolveControllerManager(): string {
  const override = process.env.KONDUCTOR_KUBE_CONTROLLER_MANAGER;
  if (override) {
    if (!isExecutable(override))
      throw new Error(
        `${override} is not an executable file; fix KONDUCTOR_KUBE_CONTROLLER_MANAGER or unset it`,
      );
    return override;
  }
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (assets && isExecutable(join(assets, 'kube-controller-manager')))
    return join(assets, 'kube-controller-manager');
  const recorded = recordedBinaries().kubeControllerManager;
  if (typeof recorded === 'string' && isExecutable(recorded)) return recorded;
  const built = cached('kube-controller-manager');
  if (built) return built;
  throw new Error(
    "test control plane: kube-controller-manager not found (the controllerManager option runs it). Run 'KONDUCTOR_WITH_CONTROLLER_MANAGER=1 bash node_modules/konductor/scripts/provision.sh' " +
      "('npm run provision' in konductor's own repository; it builds and caches it next to the kube-apiserver), or set KONDUCTOR_KUBE_CONTROLLER_MANAGER to a kube-controller-manager 1.20 binary.",
  );
}
