import { ApiError, on, type ApiClient, type ChangeContext, type EventContext, type KubeObject, type Logger } from 'konductor';
import { readInputs, reconcile, removeChildren, type PrometheusStatus } from './reconcile.js';
import type { PrometheusResource, PrometheusSpec } from './types.js';

const API = 'monitoring.coreos.com/v1';
type Prometheus = PrometheusResource & KubeObject & { status?: PrometheusStatus };

/** The status to write: unchanged conditions keep their transition time, and an equal status is not written at all. */
function nextStatus(previous: PrometheusStatus | undefined, next: PrometheusStatus): PrometheusStatus | undefined {
  const conditions = next.conditions.map((condition) => {
    const before = previous?.conditions?.find((c) => c.type === condition.type);
    const same = before && before.status === condition.status && before.reason === condition.reason && before.message === condition.message;
    return same ? { ...condition, lastTransitionTime: before.lastTransitionTime } : condition;
  });
  const status = { ...next, conditions };
  return JSON.stringify(previous) === JSON.stringify(status) ? undefined : status;
}

/**
 * The Prometheus operator: `Prometheus` objects get a StatefulSet, the governing Service and a Secret
 * with the configuration generated from the ServiceMonitors they select. A ServiceMonitor change, or a
 * change to namespace labels, re-renders every Prometheus; only changed bytes are written.
 */
export class PrometheusOperator {
  private rendering: Promise<void> | undefined;
  private again = false;
  /**
   * The Prometheus objects this operator handles (its change handlers saw them). Re-renders cover only
   * these, so an operator limited to some namespaces never touches objects outside them.
   */
  private readonly known = new Map<string, { namespace: string; name: string }>();

  private async apply({ body, client, logger, patch }: ChangeContext<PrometheusSpec, PrometheusStatus>): Promise<void> {
    const prometheus = body as Prometheus;
    this.known.set(prometheus.metadata.uid ?? `${prometheus.metadata.namespace}/${prometheus.metadata.name}`, {
      namespace: prometheus.metadata.namespace,
      name: prometheus.metadata.name,
    });
    const status = nextStatus(prometheus.status, await reconcile(client, prometheus, await readInputs(client), logger));
    if (status) Object.assign(patch.status, status);
  }

  /** One render of everything at a time; requests during a render collapse into one more render. */
  private renderAll(client: ApiClient, logger: Logger): Promise<void> {
    if (this.rendering) {
      this.again = true;
      return this.rendering;
    }
    this.rendering = (async () => {
      do {
        this.again = false;
        const inputs = await readInputs(client);
        for (const [uid, { namespace, name }] of [...this.known]) {
          const path = `/apis/${API}/namespaces/${namespace}/prometheuses/${name}`;
          const prometheus = await client.request<Prometheus>('GET', path).catch((error: unknown) => {
            if (error instanceof ApiError && error.status === 404) return undefined;
            throw error;
          });
          if (!prometheus || prometheus.metadata.uid !== uid) {
            this.known.delete(uid);
            continue;
          }
          if (prometheus.metadata.deletionTimestamp) continue;
          const status = nextStatus(prometheus.status, await reconcile(client, prometheus, inputs, logger.child({ prometheus: `${namespace}/${name}` })));
          if (!status) continue;
          await client.request('PATCH', `/apis/${API}/namespaces/${namespace}/prometheuses/${name}/status`, {
            body: { status },
            contentType: 'application/merge-patch+json',
          });
        }
      } while (this.again);
    })().finally(() => {
      this.rendering = undefined;
    });
    return this.rendering;
  }

  @on.create(API, 'prometheuses')
  async created(context: ChangeContext<PrometheusSpec, PrometheusStatus>): Promise<void> {
    await this.apply(context);
  }

  @on.update(API, 'prometheuses')
  async updated(context: ChangeContext<PrometheusSpec, PrometheusStatus>): Promise<void> {
    await this.apply(context);
  }

  @on.resume(API, 'prometheuses')
  async resumed(context: ChangeContext<PrometheusSpec, PrometheusStatus>): Promise<void> {
    await this.apply(context);
  }

  @on.deletion(API, 'prometheuses')
  async deleted({ body, client, uid }: ChangeContext<PrometheusSpec>): Promise<void> {
    await removeChildren(client, body as Prometheus);
    this.known.delete(uid);
  }

  @on.event(API, 'servicemonitors')
  async monitorChanged({ client, logger }: EventContext): Promise<void> {
    await this.renderAll(client, logger);
  }

  @on.event('v1', 'namespaces')
  async namespaceChanged({ type, client, logger }: EventContext): Promise<void> {
    // Only label changes matter, but events do not say what changed; re-rendering writes only differences.
    if (type !== 'DELETED') await this.renderAll(client, logger);
  }
}
