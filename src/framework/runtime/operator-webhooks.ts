import { ShardLabels } from '../sharding/shard-labels.js';
import { shardLabellingSpecs, type LiveRing } from './shard-labelling.js';
import type { Tracing } from '../observability/tracing.js';
import type { ApiClient } from '../api/api-client.js';
import { discoverResource } from '../api/discovery.js';
import { resourceId, type Resource } from '../api/resource.js';
import { certificateSecretName } from '../admission/certificate-secret.js';
import { CertificateStore, type CertificateBundle } from '../admission/certificate-store.js';
import {
  deleteOwnWebhookConfigurations,
  writeConversion,
  writeWebhookConfigurations,
} from '../admission/configuration-writer.js';
import {
  conversionWebhook,
  webhookConfigurations,
  type WebhookClient,
  type WebhookEntry,
} from '../admission/webhook-configurations.js';
import { conversionPath, webhookPath } from '../admission/webhook-paths.js';
import { WebhookServer } from '../admission/webhook-server.js';
import type { Cache, Indexes } from '../intents/cache-contract.js';
import type { Memo } from '../intents/memo.js';
import type { Logger } from '../observability/logger.js';
import type { Registry } from '../registry/registry.js';
import type { Identity } from '../state/identity.js';
import { isNamespaceGlob } from './namespace-patterns.js';
import { toMilliseconds, type DurationInput } from '../clock/duration.js';

/** Admission and conversion webhooks: where they are served and how the API server reaches them. */
export interface WebhookOptions {
  /** Serve the declared webhooks (default true). False: they are logged as not served, and the operator runs without them. */
  enabled?: boolean;
  /** The HTTPS port of the webhook server. Default 9443; 0 picks a free one (then `url` names no port). */
  port?: number;
  /** The address it listens on. Default `0.0.0.0`. */
  host?: string;
  /**
   * How the API server reaches the server in a cluster: the Service in front of the operator's pods
   * (`port`: the Service's port, default 443). The serving certificate names `<name>.<namespace>.svc`.
   */
  service?: {
    /** The Service's namespace. */
    namespace: string;
    /** The Service's name. */
    name: string;
    /** The Service's port. Default 443. */
    port?: number;
  };
  /**
   * How the API server reaches the server otherwise (local development, tests): a base URL such as
   * `https://127.0.0.1:9443`. Without a port in it, the server's own port is used. The certificate names its host.
   */
  url?: string;
  /** Create and update the webhook configurations and CRD conversions from the handlers (default true). */
  managed?: boolean;
  /**
   * Where the CA and serving certificate are kept, so replicas share them: a `kubernetes.io/tls`
   * Secret. Default: `<identity>-webhook-tls` in the Service's namespace, else
   * `$POD_NAMESPACE`, else the operator's only namespace, else `default`. Validities are for tests and
   * odd policies (defaults: CA 365 days, serving certificate 90 days, renewed at two thirds of its life).
   */
  certificates?: {
    /** The Secret's namespace. */
    namespace?: string;
    /** The Secret's name. */
    secretName?: string;
    /** How long a CA is valid. Default 365 days. */
    caValidity?: DurationInput;
    /** How long a serving certificate is valid. Default 90 days. */
    servingValidity?: DurationInput;
    /** How often the Secret is read again, to pick up another replica's renewal. Default 60 s. */
    pollInterval?: DurationInput;
  };
  /**
   * CA certificates (PEM) of the client certificate the API server presents to admission webhooks
   * (its `--admission-control-config-file` names a `WebhookAdmissionConfiguration` whose
   * `kubeConfigFile` holds that certificate). When set, admission requests from any other caller are
   * refused (403) before their body is read, so only the API server can reach the handlers.
   * Conversion webhooks stay open to any caller: the API server presents no certificate to them.
   */
  clientCA?: string;
}

/** What the webhooks need from the operator. @internal */
export interface OperatorWebhookServices {
  client: ApiClient;
  registry: Registry;
  identity: Identity;
  logger: Logger;
  namespaces: readonly string[] | undefined;
  cache: Cache;
  indexes: Indexes;
  memo: Memo;
  /** Traces each review. */
  tracing?: Tracing;
  /** With sharding: the ring new objects are labelled by, at creation (see {@link shardLabellingSpecs}). */
  shardRing?: LiveRing;
}

const DEFAULT_PORT = 9443;

/** The host names the serving certificate must name for the API server to accept it. */
export function certificateHosts(options: WebhookOptions): string[] {
  if (options.service) {
    const { name, namespace } = options.service;
    return [
      `${name}.${namespace}.svc`,
      `${name}.${namespace}.svc.cluster.local`,
      `${name}.${namespace}`,
      name,
    ];
  }
  if (options.url) return [new URL(options.url).hostname.replace(/^\[|\]$/g, '')];
  return ['localhost', '127.0.0.1'];
}

/**
 * Runs the webhook server of an operator that declares `@on.validate`, `@on.mutate` or `@on.convert`
 * handlers: certificates from their Secret, the HTTPS server, and the configurations the API server
 * calls it by. Every replica serves (admission is not leader work); every replica writes the same
 * configurations, which is idempotent. @internal
 */
export class OperatorWebhooks {
  private server: WebhookServer | undefined;
  private store: CertificateStore | undefined;
  private client: WebhookClient | undefined;
  private entries: WebhookEntry[] = [];
  private serving = false;
  /** The port the webhook server listens on, once started. */
  port: number | undefined;

  constructor(
    private readonly options: WebhookOptions | undefined,
    private readonly services: OperatorWebhookServices,
  ) {}

  /** Whether there is anything to serve. */
  get declared(): boolean {
    return (
      this.services.registry.admission().length > 0 ||
      this.services.registry.conversions().length > 0
    );
  }

  /** Starts serving; resolves once the server listens and the configurations point at it. */
  async start(): Promise<void> {
    if (!this.declared) return;
    const options = this.options ?? {};
    const { client, identity, logger } = this.services;
    if (options.enabled === false) {
      const handlers = [
        ...this.services.registry.admission().map((spec) => spec.id),
        ...this.services.registry.conversions().map((spec) => spec.id),
      ];
      logger.warn(
        { handlers },
        `webhooks are turned off: ${handlers.join(', ')} are not served, so the API server admits and converts without them`,
      );
      return;
    }
    if (!options.service && !options.url) {
      throw new Error(
        'this operator declares admission or conversion handlers but no way for the API server to reach them: set `webhooks.service` (in a cluster) or `webhooks.url` (local development), or --webhook-service / --webhook-url',
      );
    }
    if (this.services.shardRing) {
      const labels = new ShardLabels(identity.prefix);
      const { registry, shardRing } = this.services;
      for (const spec of shardLabellingSpecs(registry.handlers, labels, shardRing))
        registry.registerAdmission(spec);
    }
    const namespace =
      options.certificates?.namespace ??
      options.service?.namespace ??
      process.env.POD_NAMESPACE ??
      this.onlyNamespace() ??
      'default';
    this.store = new CertificateStore({
      client,
      namespace,
      secretName: options.certificates?.secretName ?? certificateSecretName(identity.name),
      hosts: certificateHosts(options),
      logger: logger.child({ component: 'webhook-certificates' }),
      caValidityMs: certificateDuration(options.certificates?.caValidity, 'caValidity'),
      servingValidityMs: certificateDuration(
        options.certificates?.servingValidity,
        'servingValidity',
      ),
      pollIntervalMs: certificateDuration(options.certificates?.pollInterval, 'pollInterval'),
    });
    const bundle = await this.store.ensure();
    this.server = new WebhookServer({
      registry: this.services.registry,
      port: options.port ?? DEFAULT_PORT,
      host: options.host,
      certificate: { cert: bundle.cert, key: bundle.key },
      logger: logger.child({ component: 'webhooks' }),
      client,
      resolve: (apiVersion, name) => this.resolved.get(`${apiVersion}|${name}`),
      cache: this.services.cache,
      indexes: this.services.indexes,
      memo: this.services.memo,
      clientCA: options.clientCA,
      tracing: this.services.tracing,
    });
    await this.resolveResources();
    this.port = await this.server.start();
    this.client = options.service
      ? {
          service: {
            namespace: options.service.namespace,
            name: options.service.name,
            port: options.service.port ?? 443,
          },
        }
      : { url: this.baseUrl(options.url!, this.port) };
    logger.info({ port: this.port }, 'webhook server listening');
    if (options.managed !== false) await this.publish(bundle);
    this.serving = true;
    this.store.start((next) => this.rotate(next));
  }

  /** Ready once it serves (or when there is nothing to serve). */
  readiness(): { ok: true } | { ok: false; reason: string } {
    return this.declared && this.options?.enabled !== false && !this.serving
      ? { ok: false, reason: 'the webhook server is not serving yet' }
      : { ok: true };
  }

  /**
   * Removes the admission configurations this operator registered, for an operator going for good;
   * failures are logged (whoever removes the operator can delete them), never thrown.
   */
  async withdraw(): Promise<void> {
    if (!this.declared || this.options?.managed === false || this.options?.enabled === false)
      return;
    const { client, identity, logger } = this.services;
    try {
      const deleted = await deleteOwnWebhookConfigurations(client, identity.name);
      for (const name of deleted)
        logger.info(
          { configuration: name },
          `removed ${name}: the operator is going for good, and its webhooks would refuse every write without it`,
        );
    } catch (error) {
      logger.warn(
        { err: error instanceof Error ? error.message : String(error) },
        `could not remove the webhook configurations ${identity.name}; delete them by hand, or writes they cover are refused`,
      );
    }
  }

  async stop(): Promise<void> {
    this.serving = false;
    this.store?.stop();
    await this.server?.stop();
  }

  private readonly resolved = new Map<string, Resource>();

  /** Every admitted resource resolved once, so requests and configurations name it exactly. */
  private async resolveResources(): Promise<void> {
    const specs = this.services.registry.admission();
    for (const spec of specs) {
      const key = `${spec.resource.apiVersion}|${spec.resource.name}`;
      let resource = this.resolved.get(key);
      if (!resource) {
        resource = await discoverResource(this.services.client, spec.resource);
        this.resolved.set(key, resource);
      }
      this.entries.push({
        kind: spec.kind,
        id: spec.id,
        path: webhookPath(spec),
        resource,
        operations: spec.options.operations,
        subresource: spec.options.subresource,
        failurePolicy: spec.options.failurePolicy,
        timeoutSeconds: spec.options.timeoutSeconds,
        namespaceSelector: spec.options.namespaceSelector,
        objectSelector: spec.options.objectSelector,
      });
      this.services.logger.debug(
        { resource: resourceId(resource), handler: spec.id },
        'admission handler resolved',
      );
    }
  }

  /** Writes the configurations and CRD conversions with this bundle's CAs. */
  private async publish(bundle: CertificateBundle): Promise<void> {
    const { client, identity, logger } = this.services;
    const namespaces = this.services.namespaces;
    const literal =
      namespaces && namespaces.length > 0 && !namespaces.some(isNamespaceGlob)
        ? namespaces
        : undefined;
    if (literal) await this.warnWithoutNamespaceLabel();
    const configurations = webhookConfigurations({
      name: identity.name,
      entries: this.entries,
      client: this.client!,
      caBundle: bundle.caBundle,
      namespaces: literal,
    });
    await writeWebhookConfigurations(client, identity.name, configurations, logger);
    for (const conversion of this.services.registry.conversions()) {
      await writeConversion(
        client,
        conversion.group,
        conversion.name,
        conversionWebhook(
          this.client!,
          conversionPath(conversion.group, conversion.name),
          bundle.caBundle,
        ),
        logger,
      );
    }
  }

  /**
   * A renewed bundle: the configurations get its CAs first, then the server its certificate, so the
   * API server trusts the new certificate before it is presented (the store staged a new CA in the
   * bundle well before it signs with it).
   */
  private async rotate(bundle: CertificateBundle): Promise<void> {
    try {
      if (this.options?.managed !== false) await this.publish(bundle);
      this.server?.setCertificate({ cert: bundle.cert, key: bundle.key });
      this.services.logger.info(
        { notAfter: bundle.notAfter.toISOString() },
        'webhook certificate renewed',
      );
    } catch (error) {
      this.services.logger.error(
        { err: error instanceof Error ? error.message : String(error) },
        'publishing the renewed webhook certificate failed; retried at the next certificate check',
      );
      throw error;
    }
  }

  private warned = false;

  /**
   * Webhooks of an operator limited to some namespaces select them by `kubernetes.io/metadata.name`,
   * which API servers set from Kubernetes 1.21 on; before that, namespaces without it are not covered.
   */
  private async warnWithoutNamespaceLabel(): Promise<void> {
    if (this.warned) return;
    this.warned = true;
    const version = await this.services.client
      .request<{ major?: string; minor?: string }>('GET', '/version')
      .catch(() => undefined);
    const minor = Number.parseInt(version?.minor ?? '', 10);
    if (version?.major === '1' && minor < 21) {
      this.services.logger.warn(
        { served: this.services.namespaces },
        `this API server (1.${minor}) does not label namespaces with kubernetes.io/metadata.name, which the webhooks select the served namespaces by: label them (kubectl label namespace <ns> kubernetes.io/metadata.name=<ns>) or their objects are admitted without the webhooks`,
      );
    }
  }

  private onlyNamespace(): string | undefined {
    const namespaces = this.services.namespaces ?? [];
    return namespaces.length === 1 && !isNamespaceGlob(namespaces[0]!) ? namespaces[0] : undefined;
  }

  private baseUrl(url: string, port: number): string {
    const parsed = new URL(url);
    if (parsed.protocol !== 'https:')
      throw new Error(
        `webhooks.url ${url} must be https: the API server calls webhooks over TLS only`,
      );
    if (!parsed.port) parsed.port = String(port);
    return parsed.toString().replace(/\/+$/, '');
  }
}

/** A certificate option in milliseconds; validity periods may exceed a timer's range, the store schedules within it. */
function certificateDuration(value: DurationInput | undefined, what: string): number | undefined {
  return value === undefined
    ? undefined
    : toMilliseconds(value, `OperatorOptions.webhooks.certificates.${what}`);
}
