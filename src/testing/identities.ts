import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';

/** Identity for {@link kubeConfigForServiceAccount}. */
export interface ServiceAccountRef {
  /** The ServiceAccount's namespace. */
  namespace: string;
  /** The ServiceAccount's name. */
  name: string;
}

/**
 * A KubeConfig for the same cluster as `admin` that acts as a ServiceAccount (created if missing),
 * authenticated with a token from the TokenRequest API, so RBAC applies exactly as to an operator Pod.
 */
export async function kubeConfigForServiceAccount(
  admin: KubeConfig,
  account: ServiceAccountRef,
  expirationSeconds = 3600,
): Promise<KubeConfig> {
  const core = admin.makeApiClient(CoreV1Api);
  try {
    await core.createNamespacedServiceAccount({
      namespace: account.namespace,
      body: { metadata: { name: account.name } },
    });
  } catch (error) {
    if ((error as { code?: number }).code !== 409) throw error;
  }
  const response = await core.createNamespacedServiceAccountToken({
    namespace: account.namespace,
    name: account.name,
    body: {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { audiences: [], expirationSeconds },
    },
  });
  const token = response.status?.token;
  if (!token)
    throw new Error(
      `TokenRequest for ServiceAccount ${account.namespace}/${account.name} returned no token`,
    );
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error('the admin KubeConfig has no current cluster');
  const user = `system:serviceaccount:${account.namespace}:${account.name}`;
  return kubeConfigWithToken({ ...cluster, name: cluster.name }, user, token);
}

/** A one-context KubeConfig for a cluster and a bearer token. */
export function kubeConfigWithToken(
  cluster: { name: string; server: string; caData?: string; skipTLSVerify?: boolean },
  user: string,
  token: string,
): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: cluster.name,
        server: cluster.server,
        caData: cluster.caData,
        skipTLSVerify: cluster.skipTLSVerify ?? false,
      },
    ],
    users: [{ name: user, token }],
    contexts: [{ name: cluster.name, cluster: cluster.name, user }],
    currentContext: cluster.name,
  });
  return kc;
}
