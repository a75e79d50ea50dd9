// Reads kubeconfig files and the in-cluster ServiceAccount without importing @kubernetes/client-node:
// its KubeConfig pulls in the whole generated API (about 70 MB of resident memory in a process that
// otherwise needs ~50 MB). Credentials that need a plugin (exec, auth-provider) are rare in operators
// and delegate to client-node, loaded on first use only.
import { existsSync, readFileSync, statSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import yaml from 'js-yaml';

/**
 * What the API client needs from a kubeconfig: the server, and credentials applied to each request
 * (tokens rotate). `@kubernetes/client-node`'s `KubeConfig` satisfies it too.
 */
export interface ClusterAccess {
  /** The API server to talk to; null when the kubeconfig names no current cluster. */
  getCurrentCluster(): {
    /** The server's URL. */
    server: string;
  } | null;
  /** Adds the TLS material and the `Authorization` header to one request's options. */
  applyToHTTPSOptions(options: RequestOptions): Promise<void>;
}

/** Where {@link loadKubeconfig} reads from. */
export interface KubeconfigSource {
  /** A kubeconfig file; default: `$KUBECONFIG` (a list, merged as kubectl does), then `~/.kube/config`, then in-cluster. */
  path?: string;
  /** A context other than the file's `current-context`. */
  context?: string;
  /** Environment to read KUBECONFIG, HOME and KUBERNETES_SERVICE_* from (tests). Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** The ServiceAccount folder for in-cluster access (tests). */
  serviceAccountDir?: string;
}

/** A kubeconfig that cannot be used; the message says which file or context and what to do. */
export class KubeconfigError extends Error {
  /** Always `'KubeconfigError'`. */
  override readonly name = 'KubeconfigError';
}

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** Token files are re-read at most this often (client-go re-reads them every minute). */
const TOKEN_FILE_TTL_MS = 60_000;

type Entry = Record<string, unknown>;

/** A named cluster, user or context of a kubeconfig file. */
export interface NamedEntry {
  /** The entry's name, as contexts refer to it. */
  name: string;
  /** The entry's fields, as the file has them (`server`, `token`, `client-certificate`...). */
  value: Readonly<Record<string, unknown>>;
  /** The folder relative paths in this entry are resolved against (the file's). */
  base: string;
}

interface Merged {
  currentContext: string | undefined;
  clusters: Map<string, NamedEntry>;
  users: Map<string, NamedEntry>;
  contexts: Map<string, NamedEntry>;
  files: string[];
}

/**
 * Loads cluster access the way kubectl does: the given file, or the files in `$KUBECONFIG` merged
 * (the first file to name a cluster, user or context wins), or `~/.kube/config`; inside a cluster
 * with none of those, the Pod's ServiceAccount. Throws {@link KubeconfigError} when none is usable.
 */
export function loadKubeconfig(source: KubeconfigSource = {}): Kubeconfig {
  const env = source.env ?? process.env;
  const files = kubeconfigFiles(source, env);
  if (files.length === 0) {
    const inCluster = inClusterAccess(env, source.serviceAccountDir ?? SERVICE_ACCOUNT_DIR);
    if (inCluster) return inCluster;
    throw new KubeconfigError(
      'no kubeconfig found: set KUBECONFIG or --kubeconfig, create ~/.kube/config, or run inside a cluster',
    );
  }
  const merged = mergeFiles(files);
  const contextName = source.context ?? merged.currentContext;
  const available = [...merged.contexts.keys()];
  if (contextName === undefined || contextName === '') {
    throw new KubeconfigError(
      `${files.join(', ')}: no current-context; pass --context (${available.length > 0 ? `available: ${available.join(', ')}` : 'the kubeconfig has no contexts'})`,
    );
  }
  const context = merged.contexts.get(contextName);
  if (!context) {
    throw new KubeconfigError(
      `context '${contextName}' not found; ${available.length > 0 ? `available: ${available.join(', ')}` : 'the kubeconfig has no contexts'}`,
    );
  }
  const clusterName = stringField(context.value, 'cluster');
  const cluster = clusterName === undefined ? undefined : merged.clusters.get(clusterName);
  if (!cluster)
    throw new KubeconfigError(
      `context '${contextName}' names cluster '${clusterName ?? ''}', which ${files.join(', ')} does not define`,
    );
  const userName = stringField(context.value, 'user');
  const user = userName === undefined || userName === '' ? undefined : merged.users.get(userName);
  if (userName && !user)
    throw new KubeconfigError(
      `context '${contextName}' names user '${userName}', which ${files.join(', ')} does not define`,
    );
  return Kubeconfig.fromContext({
    contextName,
    namespace: stringField(context.value, 'namespace'),
    cluster,
    user,
    delegate: { files, context: contextName },
  });
}

/** Cluster access read from a kubeconfig or the in-cluster ServiceAccount. */
export class Kubeconfig implements ClusterAccess {
  private readonly server: string;
  private token: { value: string; readAt: number } | undefined;
  private delegated: Promise<ClusterAccess> | undefined;

  private constructor(
    /** The context in use (`in-cluster` for the ServiceAccount). */
    readonly contextName: string,
    /** The context's default namespace, or the Pod's namespace in-cluster. */
    readonly namespace: string | undefined,
    server: string,
    private readonly tls: {
      ca?: Buffer;
      cert?: Buffer;
      key?: Buffer;
      insecure: boolean;
      servername?: string;
    },
    private readonly credentials: {
      token?: string;
      tokenFile?: string;
      basic?: string;
      /** exec / auth-provider users: client-node does those. */
      plugin?: { files: string[]; context: string };
    },
  ) {
    this.server = server;
  }

  /** The context in use, read from one kubeconfig's entries (see {@link loadKubeconfig}). */
  static fromContext(parts: {
    contextName: string;
    namespace: string | undefined;
    cluster: NamedEntry;
    user: NamedEntry | undefined;
    /** The files and context, for credential plugins left to client-node. */
    delegate: { files: string[]; context: string };
  }): Kubeconfig {
    const { cluster, user } = parts;
    const where = `cluster '${cluster.name}'`;
    const server = stringField(cluster.value, 'server');
    if (!server) throw new KubeconfigError(`${where} has no server`);
    const tls = {
      ca: bytes(cluster, 'certificate-authority-data', 'certificate-authority'),
      insecure: cluster.value['insecure-skip-tls-verify'] === true,
      servername: stringField(cluster.value, 'tls-server-name'),
      cert: user && bytes(user, 'client-certificate-data', 'client-certificate'),
      key: user && bytes(user, 'client-key-data', 'client-key'),
    };
    const u = user?.value ?? {};
    const username = stringField(u, 'username');
    const password = stringField(u, 'password');
    const plugin =
      u.exec !== undefined || u['auth-provider'] !== undefined ? parts.delegate : undefined;
    const credentials = {
      token: stringField(u, 'token'),
      tokenFile: user && pathField(user, 'tokenFile'),
      basic:
        username !== undefined
          ? Buffer.from(`${username}:${password ?? ''}`).toString('base64')
          : undefined,
      plugin,
    };
    return new Kubeconfig(parts.contextName, parts.namespace, server, tls, credentials);
  }

  /** In-cluster access: the API server from KUBERNETES_SERVICE_*, the ServiceAccount's CA and (rotating) token. */
  static inCluster(host: string, port: string, dir: string): Kubeconfig {
    const hostPart = host.includes(':') ? `[${host}]` : host;
    const namespaceFile = join(dir, 'namespace');
    const namespace = existsSync(namespaceFile)
      ? readFileSync(namespaceFile, 'utf8').trim()
      : undefined;
    const caFile = join(dir, 'ca.crt');
    return new Kubeconfig(
      'in-cluster',
      namespace,
      `https://${hostPart}:${port}`,
      { ca: existsSync(caFile) ? readFileSync(caFile) : undefined, insecure: false },
      { tokenFile: join(dir, 'token') },
    );
  }

  /** The API server's URL (as `KubeConfig.getCurrentCluster()` gives it). */
  getCurrentCluster(): {
    /** The server's URL. */
    server: string;
  } {
    return { server: this.server };
  }

  /** Sets the TLS material and the `Authorization` header of one request; token files are re-read every minute. */
  async applyToHTTPSOptions(options: RequestOptions): Promise<void> {
    if (this.credentials.plugin) {
      this.delegated ??= delegateToClientNode(this.credentials.plugin);
      await (await this.delegated).applyToHTTPSOptions(options);
      return;
    }
    if (this.tls.ca) options.ca = this.tls.ca;
    if (this.tls.cert) options.cert = this.tls.cert;
    if (this.tls.key) options.key = this.tls.key;
    if (this.tls.servername) options.servername = this.tls.servername;
    if (this.tls.insecure) options.rejectUnauthorized = false;
    const token = this.currentToken();
    const headers = { ...(options.headers as Record<string, string> | undefined) };
    if (token) headers.Authorization = `Bearer ${token}`;
    else if (this.credentials.basic) headers.Authorization = `Basic ${this.credentials.basic}`;
    options.headers = headers;
  }

  private currentToken(): string | undefined {
    if (this.credentials.token) return this.credentials.token;
    const file = this.credentials.tokenFile;
    if (!file) return undefined;
    const now = Date.now();
    if (!this.token || now - this.token.readAt > TOKEN_FILE_TTL_MS) {
      try {
        this.token = { value: readFileSync(file, 'utf8').trim(), readAt: now };
      } catch (error) {
        // Keep the last token if the file is mid-rotation; fail clearly if there never was one.
        if (!this.token)
          throw new KubeconfigError(
            `cannot read the token file ${file}: ${(error as Error).message}`,
          );
      }
    }
    return this.token.value;
  }
}

function kubeconfigFiles(source: KubeconfigSource, env: NodeJS.ProcessEnv): string[] {
  if (source.path !== undefined) {
    if (!existsSync(source.path))
      throw new KubeconfigError(`the kubeconfig ${source.path} does not exist`);
    return [source.path];
  }
  const listed = (env.KUBECONFIG ?? '').split(delimiter).filter((p) => p !== '');
  if (listed.length > 0) {
    const present = listed.filter((p) => existsSync(p));
    if (present.length === 0)
      throw new KubeconfigError(`KUBECONFIG names ${listed.join(', ')}, and none of them exists`);
    return present;
  }
  const home = env.HOME ?? homedir();
  const fallback = join(home, '.kube', 'config');
  return existsSync(fallback) ? [fallback] : [];
}

function inClusterAccess(env: NodeJS.ProcessEnv, dir: string): Kubeconfig | undefined {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port || !existsSync(join(dir, 'token'))) return undefined;
  return Kubeconfig.inCluster(host, port, dir);
}

function mergeFiles(files: readonly string[]): Merged {
  const merged: Merged = {
    currentContext: undefined,
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
    files: [...files],
  };
  for (const file of files) {
    let document: unknown;
    try {
      document = yaml.load(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new KubeconfigError(`cannot read the kubeconfig ${file}: ${(error as Error).message}`);
    }
    if (document === null || document === undefined) continue;
    if (typeof document !== 'object' || Array.isArray(document))
      throw new KubeconfigError(`the kubeconfig ${file} is not a YAML mapping`);
    const config = document as Entry;
    const base = dirname(file);
    const current = stringField(config, 'current-context');
    if (merged.currentContext === undefined && current) merged.currentContext = current;
    addNamed(merged.clusters, config.clusters, 'cluster', base, file);
    addNamed(merged.users, config.users, 'user', base, file);
    addNamed(merged.contexts, config.contexts, 'context', base, file);
  }
  return merged;
}

function addNamed(
  into: Map<string, NamedEntry>,
  list: unknown,
  key: string,
  base: string,
  file: string,
): void {
  if (list === undefined || list === null) return;
  if (!Array.isArray(list))
    throw new KubeconfigError(`the kubeconfig ${file}: '${key}s' must be a list`);
  for (const item of list as unknown[]) {
    if (typeof item !== 'object' || item === null) continue;
    const { name } = item as Entry;
    const value = (item as Entry)[key];
    if (typeof name !== 'string' || into.has(name)) continue; // the first file to name it wins
    into.set(name, {
      name,
      value: typeof value === 'object' && value !== null ? (value as Entry) : {},
      base,
    });
  }
}

function stringField(entry: Entry, key: string): string | undefined {
  const value = entry[key];
  return typeof value === 'string' ? value : undefined;
}

function pathField(entry: NamedEntry, key: string): string | undefined {
  const value = stringField(entry.value, key);
  if (value === undefined || value === '') return undefined;
  return isAbsolute(value) ? value : join(entry.base, value);
}

/** Inline base64 data, or a file (relative to the kubeconfig that named it). */
function bytes(entry: NamedEntry, dataKey: string, fileKey: string): Buffer | undefined {
  const data = stringField(entry.value, dataKey);
  if (data) return Buffer.from(data, 'base64');
  const file = pathField(entry, fileKey);
  if (!file) return undefined;
  try {
    if (!statSync(file).isFile()) throw new Error('not a file');
    return readFileSync(file);
  } catch (error) {
    throw new KubeconfigError(
      `'${entry.name}': cannot read ${fileKey} ${file}: ${(error as Error).message}`,
    );
  }
}

async function delegateToClientNode(source: {
  files: string[];
  context: string;
}): Promise<ClusterAccess> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  if (source.files.length === 1) kc.loadFromFile(source.files[0]!);
  else kc.loadFromDefault({}, false);
  kc.setCurrentContext(source.context);
  return kc;
}
