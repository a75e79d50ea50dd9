import type { ApiClient } from '../api/api-client.js';
import { ApiError } from '../api/api-error.js';
import type { Clock } from '../clock/clock.js';
import { systemClock } from '../clock/clock.js';
import type { LongTimeout } from '../clock/long-timeout.js';
import type { Logger } from '../observability/logger.js';
import {
  checkedHosts,
  issueAuthority,
  issueServingCertificate,
  type IssuedCertificate,
} from './certificates.js';
import {
  defaultOverlapMs,
  planIsIdle,
  planRotation,
  type RotationPlan,
  type RotationTimes,
} from './certificate-rotation.js';
import {
  caBundleOf,
  lifetime,
  readStoredCertificates,
  rotationState,
  SECRET_TYPE,
  secretData,
  type KeyedCertificate,
  type SecretObject,
  type StoredCertificates,
} from './certificate-secret.js';

/** What a webhook server and its configurations need: the trusted CAs and the serving pair (all PEM). */
export interface CertificateBundle {
  /** The CAs the API server must trust (`caBundle` of the webhook configurations): one, or two (three briefly) while a CA rotates. */
  caBundle: string;
  /** The serving certificate. */
  cert: string;
  /** Its private key (PKCS#8). */
  key: string;
  /** When the serving certificate expires. */
  notAfter: Date;
}

/** Options for {@link CertificateStore}. */
export interface CertificateStoreOptions {
  client: ApiClient;
  /** Namespace of the Secret (usually the operator's own). */
  namespace: string;
  /** Name of the Secret holding the certificates (type `kubernetes.io/tls` plus `ca.crt` and the CA keys). */
  secretName: string;
  /** DNS names and/or IP addresses the serving certificate is for, e.g. `my-webhook.my-namespace.svc`. */
  hosts: string[];
  logger: Logger;
  clock?: Clock;
  /** CA lifetime; default 365 days. */
  caValidityMs?: number;
  /** Serving certificate lifetime; default 90 days. Renewed at 2/3 of it. */
  servingValidityMs?: number;
  /** How often the Secret is re-read for another replica's rotation; default 60 s. */
  pollIntervalMs?: number;
  /** How long a new CA is published before it signs, and an old one kept after; default max(servingValidity / 10, pollInterval). */
  overlapMs?: number;
  /** The CA's common name; default `konductor webhook CA <namespace>/<secretName>`. */
  commonName?: string;
}

const DAY_MS = 86_400_000;
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** Attempts of one `ensure()` against writes racing with other replicas. */
const MAX_ATTEMPTS = 5;
/** The shortest wait between looks, so a due step that keeps failing cannot spin. */
const MIN_DELAY_MS = 100;

/**
 * The webhook's CA and serving certificate, kept in one Secret shared by every replica: created on
 * first use, renewed and rotated so no admission request fails on the way (see
 * `certificate-rotation.ts` for the order). Concurrent replicas converge on one bundle: every write
 * carries the `resourceVersion` it read, and a conflict re-reads instead of overwriting.
 *
 * @example
 * ```ts
 * const store = new CertificateStore({ client, namespace: 'ops', secretName: 'my-operator-webhook-tls', hosts: ['my-operator.ops.svc'], logger });
 * const bundle = await store.ensure();
 * server.setCertificate(bundle);
 * store.start(async (next) => { server.setCertificate(next); await publishCaBundle(next.caBundle); });
 * ```
 */
export class CertificateStore {
  private readonly hosts: string[];
  private readonly clock: Clock;
  private readonly times: RotationTimes;
  private readonly pollIntervalMs: number;
  private readonly where: string;
  private latest: CertificateBundle | undefined;
  private delivered: CertificateBundle | undefined;
  private nextCheckAt = Infinity;
  private timer: LongTimeout | undefined;
  private running = false;
  /** Counts start() calls, so a look still in flight from before a stop() does not carry on. */
  private generation = 0;

  constructor(private readonly options: CertificateStoreOptions) {
    const { namespace, secretName } = options;
    if (namespace.length > 63 || !NAMESPACE.test(namespace))
      throw new Error(
        `CertificateStore: namespace ${JSON.stringify(namespace)} is not a DNS-1123 label`,
      );
    if (secretName.length > 253 || !SUBDOMAIN.test(secretName))
      throw new Error(
        `CertificateStore: secretName ${JSON.stringify(secretName)} is not a DNS-1123 subdomain`,
      );
    this.where = `Secret ${namespace}/${secretName}`;
    this.hosts = checkedHosts(options.hosts);
    this.clock = options.clock ?? systemClock;
    this.pollIntervalMs = positive(options.pollIntervalMs ?? 60_000, 'pollIntervalMs');
    const servingValidityMs = positive(
      options.servingValidityMs ?? 90 * DAY_MS,
      'servingValidityMs',
    );
    const caValidityMs = positive(options.caValidityMs ?? 365 * DAY_MS, 'caValidityMs');
    const overlapMs = positive(
      options.overlapMs ?? defaultOverlapMs(servingValidityMs, this.pollIntervalMs),
      'overlapMs',
    );
    // A CA must live through staging, the overlap, the switch and the retirement with room to spare.
    // Every replica must have re-read the Secret (one poll) before a staged CA signs or a retired one goes.
    if (overlapMs < this.pollIntervalMs)
      throw new Error(
        `CertificateStore (${this.where}): overlapMs (${overlapMs}) must be at least pollIntervalMs (${this.pollIntervalMs})`,
      );
    if (caValidityMs < 4 * overlapMs)
      throw new Error(
        `CertificateStore (${this.where}): caValidityMs (${caValidityMs}) must be at least 4 × the overlap (${overlapMs} ms)`,
      );
    if (servingValidityMs < 1000)
      throw new Error(`CertificateStore (${this.where}): servingValidityMs must be at least 1000`);
    this.times = { caValidityMs, servingValidityMs, overlapMs };
  }

  /**
   * The current bundle: reads the Secret and creates, renews or rotates what is due (first start:
   * a new CA and serving certificate). Throws only when the API server keeps refusing.
   */
  async ensure(): Promise<CertificateBundle> {
    let lastError: unknown;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      try {
        return await this.step();
      } catch (error) {
        if (!(ApiError.isConflict(error) || ApiError.isNotFound(error))) throw error;
        // Another replica wrote first (or deleted what we read): read again and plan from its state.
        lastError = error;
        this.options.logger.debug(
          { err: error },
          `webhook certificates: ${this.where} changed under us, reading it again`,
        );
      }
    }
    throw new Error(
      `webhook certificates: ${this.where} kept changing during ${MAX_ATTEMPTS} attempts; is another writer fighting over it?`,
      { cause: lastError },
    );
  }

  /**
   * Keeps the bundle current: looks again when the next renewal or rotation step is due and every
   * `pollIntervalMs` (to pick up another replica's), and calls `onChange` with each new bundle (the
   * caller swaps the server's certificate and publishes `caBundle`). A failed look or `onChange` is
   * logged and retried at the next one.
   */
  start(onChange: (bundle: CertificateBundle) => void | Promise<void>): void {
    if (this.running) throw new Error(`CertificateStore (${this.where}) is already started`);
    this.running = true;
    this.delivered = this.latest;
    const generation = ++this.generation;
    const current = (): boolean => this.running && this.generation === generation;
    const look = async (): Promise<void> => {
      let failed = false;
      try {
        const bundle = await this.ensure();
        if (current() && !sameBundle(this.delivered, bundle)) {
          await onChange(bundle);
          this.delivered = bundle;
        }
      } catch (error) {
        failed = true;
        this.options.logger.warn(
          { err: error },
          `webhook certificates: checking ${this.where} failed; trying again in ${this.pollIntervalMs} ms`,
        );
      }
      schedule(failed);
    };
    const schedule = (failed: boolean): void => {
      if (!current()) return;
      const due = failed ? this.pollIntervalMs : this.nextCheckAt - this.clock.now();
      // clock.setTimeout takes waits of any length (a CA a year away), so only the lower end needs a floor.
      const delay = Math.max(MIN_DELAY_MS, Math.min(this.pollIntervalMs, due));
      this.timer = this.clock.setTimeout(() => void look(), delay);
    };
    schedule(false);
  }

  /** Stops looking; `ensure()` still works. */
  stop(): void {
    this.running = false;
    this.timer?.clear();
    this.timer = undefined;
  }

  /** One read-plan-write round; a conflicting write throws {@link ApiError} (409). */
  private async step(): Promise<CertificateBundle> {
    const secrets = this.options.client.resource<SecretObject>('v1', 'secrets');
    const ref = { namespace: this.options.namespace, name: this.options.secretName };
    const secret = await secrets.find(ref);
    const stored = readStoredCertificates(secret?.data, this.hosts);
    const now = this.clock.now();
    const plan = planRotation(rotationState(stored), now, this.times);
    if (secret !== undefined && stored.problems.length > 0) {
      this.options.logger.warn(
        { problems: stored.problems },
        `webhook certificates: ${this.where} holds unusable contents (${stored.problems.join('; ')}); replacing them`,
      );
    }
    const wrongType = secret !== undefined && secret.type !== SECRET_TYPE;
    // Unusable contents are rewritten even when no certificate is due (e.g. an unreadable extra CA in ca.crt).
    if (planIsIdle(plan) && !wrongType && stored.problems.length === 0)
      return this.settled(stored, now);

    const updated = await this.apply(stored, plan, now);
    const object: SecretObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { ...ref },
      type: SECRET_TYPE,
      data: present(secretData(updated)),
    };
    if (secret === undefined) {
      await secrets.create(object);
    } else if (wrongType) {
      // The type of a Secret cannot change: replace this incarnation only (a newer one is another replica's).
      this.options.logger.warn(
        `webhook certificates: ${this.where} has type ${JSON.stringify(secret.type)}, not ${SECRET_TYPE}; replacing it`,
      );
      await secrets.delete(ref, {
        preconditions: {
          uid: secret.metadata?.uid,
          resourceVersion: secret.metadata?.resourceVersion,
        },
      });
      await secrets.create(object);
    } else {
      await secrets.patch(ref, {
        metadata: { resourceVersion: secret.metadata?.resourceVersion },
        data: secretData(updated),
      });
    }
    this.options.logger.info(
      { steps: describe(plan) },
      `webhook certificates: ${describe(plan).join(', ')} in ${this.where}`,
    );
    return this.settled(updated, now);
  }

  /** The stored state after `plan`: new certificates issued, CAs moved. */
  private async apply(
    stored: StoredCertificates,
    plan: RotationPlan,
    now: number,
  ): Promise<StoredCertificates> {
    const commonName = (
      this.options.commonName ??
      `konductor webhook CA ${this.options.namespace}/${this.options.secretName}`
    ).slice(0, 64);
    const newAuthority = async (): Promise<KeyedCertificate> =>
      keyed(await issueAuthority({ commonName, now, validityMs: this.times.caValidityMs }));
    let { signer, next, retired, serving } = stored;
    if (plan.issueAuthority) {
      signer = await newAuthority();
      next = undefined;
      retired = [];
    }
    retired = retired.filter((_, index) => !plan.dropRetired.includes(index));
    if (plan.stageAuthority) next = await newAuthority();
    if (plan.promoteAuthority && next !== undefined && signer !== undefined) {
      retired = [...retired, { cert: signer.cert, life: signer.life }];
      signer = next;
      next = undefined;
    }
    if (plan.renewServing && signer !== undefined) {
      serving = keyed(
        await issueServingCertificate(signer, {
          hosts: this.hosts,
          now,
          validityMs: this.times.servingValidityMs,
        }),
      );
    }
    return { signer, next, retired, serving, problems: [] };
  }

  /** Remembers the bundle of a settled state and when to look again. */
  private settled(stored: StoredCertificates, now: number): CertificateBundle {
    const serving = stored.serving;
    if (serving === undefined)
      throw new Error(
        `webhook certificates: ${this.where} has no serving certificate after an update (a bug)`,
      );
    this.nextCheckAt = planRotation(rotationState(stored), now, this.times).nextCheckAt;
    const bundle: CertificateBundle = {
      caBundle: caBundleOf(stored),
      cert: serving.cert,
      key: serving.key,
      notAfter: new Date(serving.life.notAfter),
    };
    this.latest = sameBundle(this.latest, bundle) ? this.latest : bundle;
    return this.latest!;
  }
}

function keyed(issued: IssuedCertificate): KeyedCertificate {
  const life = lifetime(issued.cert);
  if (life === undefined)
    throw new Error('webhook certificates: a certificate just issued is unreadable (a bug)');
  return { ...issued, life };
}

function present(data: Record<string, string | null>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(data).filter((entry): entry is [string, string] => entry[1] !== null),
  );
}

function positive(value: number, name: string): number {
  if (!(Number.isFinite(value) && value > 0))
    throw new Error(
      `CertificateStore: ${name} must be a positive number of milliseconds, got ${value}`,
    );
  return value;
}

function sameBundle(a: CertificateBundle | undefined, b: CertificateBundle): boolean {
  return a !== undefined && a.caBundle === b.caBundle && a.cert === b.cert && a.key === b.key;
}

function describe(plan: RotationPlan): string[] {
  const steps: string[] = [];
  if (plan.issueAuthority) steps.push('issued a new CA');
  if (plan.dropRetired.length > 0)
    steps.push(`dropped ${plan.dropRetired.length} retired CA(s) from the bundle`);
  if (plan.stageAuthority) steps.push('staged a new CA in the bundle');
  if (plan.promoteAuthority) steps.push('switched signing to the staged CA');
  if (plan.renewServing) steps.push('issued a new serving certificate');
  return steps.length > 0 ? steps : ['rewrote unusable contents'];
}
