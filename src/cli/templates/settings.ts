/** What a new project's files are made from (see `konductor init`). */
export interface ProjectSettings {
  /** npm package name. */
  packageName: string;
  /** Kubernetes name of the operator's ServiceAccount, Deployment, roles and image (a DNS-1123 label). */
  appName: string;
  /** API group of the example resource. */
  group: string;
  /** Version range (or tarball, URL) of konductor in package.json. */
  konductor: string;
  /** Version range of tsx: the one konductor itself depends on, so npm installs it once. */
  tsx: string;
}

/** The example resource every template speaks of. */
export const EXAMPLE = {
  kind: 'Greeting',
  plural: 'greetings',
  singular: 'greeting',
  version: 'v1',
} as const;

/** The example resource's apiVersion, `<group>/v1`. */
export function exampleApiVersion(settings: ProjectSettings): string {
  return `${settings.group}/${EXAMPLE.version}`;
}
