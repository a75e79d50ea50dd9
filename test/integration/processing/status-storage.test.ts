/**
 * Status storage where it cannot be taken for granted: forged status records, a resource without a
 * status subresource, and one whose status schema drops unknown fields. Each ends with the handler
 * run once and its bookkeeping kept somewhere it survives, never in a loop.
 */
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type CoreV1Event,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import {
  on,
  TemporaryError,
  type ChangeContext,
  type KubeObject,
} from '../../../src/framework/index.js';
import { DIFF_BASE_KEY } from '../../../src/framework/state/keys.js';
import { installCrds } from '../../../src/testing/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { LogCapture } from '../../support/log-capture.js';
import { startOperator, writesTo, type RunningOperator } from '../../support/operators.js';
import { getWidget, Widgets, WIDGET_API_VERSION } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { widgetNamespace } from '../../support/widget-namespace.js';

const GROUP = 'storage.test.konductor.dev';
const API = `${GROUP}/v1`;

/** A CRD of GROUP: with or without a status subresource, with a status schema that keeps unknown fields or not. */
function crd(
  plural: string,
  kind: string,
  options: { subresource: boolean; keepsUnknown: boolean },
): V1CustomResourceDefinition {
  const status = options.keepsUnknown
    ? { type: 'object', x_kubernetes_preserve_unknown_fields: true }
    : { type: 'object', properties: { phase: { type: 'string' } } };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${GROUP}` },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { plural, singular: kind.toLowerCase(), kind },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          ...(options.subresource ? { subresources: { status: {} } } : {}),
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: { type: 'object', x_kubernetes_preserve_unknown_fields: true },
                status,
              },
            },
          },
        },
      ],
    },
  };
}

const objects = (): CustomObjectsApi => sharedKubeConfig().makeApiClient(CustomObjectsApi);

async function eventsAbout(
  namespace: string,
  name: string,
  reason: string,
): Promise<CoreV1Event[]> {
  const list = await sharedKubeConfig()
    .makeApiClient(CoreV1Api)
    .listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` });
  return list.items.filter((event) => event.reason === reason);
}

const settle = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('status storage on the real API server', () => {
  let running: RunningOperator | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
  });

  test('a forged status record gets one InvalidStatus Warning, the create handler runs once, and the record is replaced', async () => {
    const { kc, namespace } = await widgetNamespace('forged-status');
    await new Widgets(kc, namespace).create('forged');
    // Written before the operator starts, by anyone who may write the status subresource.
    await objects().patchNamespacedCustomObjectStatus(
      {
        group: 'test.konductor.dev',
        version: 'v1',
        plural: 'widgets',
        namespace,
        name: 'forged',
        body: { status: { 'konductor.dev': { progress: { created: '{"started":"garbage"}' } } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    let runs = 0;
    class Handlers {
      @on.create(WIDGET_API_VERSION, 'widgets')
      async created(): Promise<void> {
        runs += 1;
      }
    }
    running = await startOperator(kc, namespace, [Handlers], { storage: 'status' });

    await waitFor(
      async () => (await eventsAbout(namespace, 'forged', 'InvalidStatus')).length > 0,
      { what: 'the InvalidStatus Event' },
    );
    await waitFor(
      async () =>
        typeof (
          (await getWidget(namespace, 'forged')).status as Record<string, Record<string, unknown>>
        )['konductor.dev']?.['last-handled-configuration'] === 'string',
      { what: 'the create to be handled' },
    );
    await settle(1_000);
    const [event, ...more] = await eventsAbout(namespace, 'forged', 'InvalidStatus');
    expect(more).toHaveLength(0);
    expect(event?.type).toBe('Warning');
    expect(event?.message).toContain('status["konductor.dev"].progress["created"] is unusable');
    expect(runs).toBe(1);
    expect(
      ((await getWidget(namespace, 'forged')).status as Record<string, Record<string, unknown>>)[
        'konductor.dev'
      ],
    ).not.toHaveProperty('progress.created');
  });

  test('a resource without a status subresource keeps annotations, said once at start: 1 write, the handler once', async () => {
    const kc = sharedKubeConfig();
    await installCrds(kc, [crd('gizmos', 'Gizmo', { subresource: false, keepsUnknown: true })]);
    const namespace = await uniqueNamespace(kc, 'no-subresource');
    const logs = new LogCapture();
    let runs = 0;
    class Handlers {
      @on.create(API, 'gizmos')
      async created({ patch }: ChangeContext): Promise<void> {
        runs += 1;
        patch.status.phase = 'Ready';
      }
    }
    running = await startOperator(kc, namespace, [Handlers], {
      storage: 'status',
      logger: logs.logger,
    });
    await objects().createNamespacedCustomObject({
      group: GROUP,
      version: 'v1',
      plural: 'gizmos',
      namespace,
      body: { apiVersion: API, kind: 'Gizmo', metadata: { name: 'g' }, spec: {} },
    });

    await waitFor(() => writesTo(running!.requests, 'g').length >= 1, {
      what: 'the create to be written',
    });
    await settle(1_000);
    const gizmo = (await objects().getNamespacedCustomObject({
      group: GROUP,
      version: 'v1',
      plural: 'gizmos',
      namespace,
      name: 'g',
    })) as KubeObject;
    expect(writesTo(running.requests, 'g')).toEqual(['PATCH object']);
    expect(runs).toBe(1);
    expect(gizmo.metadata?.annotations?.[DIFF_BASE_KEY]).toEqual(expect.any(String));
    expect(gizmo.status).toEqual({ phase: 'Ready' });
    expect(logs.containing('has no status subresource')).toHaveLength(1);
    expect(logs.containing('has no status subresource')[0]?.level).toBe(40);
  });

  test('a status schema that drops unknown fields: one error naming the fix, the handler runs once, its bookkeeping goes to annotations', async () => {
    const kc = sharedKubeConfig();
    await installCrds(kc, [crd('gadgets', 'Gadget', { subresource: true, keepsUnknown: false })]);
    const namespace = await uniqueNamespace(kc, 'pruned-status');
    const logs = new LogCapture();
    const runs = new Map<string, number>();
    class Handlers {
      @on.create(API, 'gadgets')
      async created({ name, patch }: ChangeContext): Promise<void> {
        runs.set(name, (runs.get(name) ?? 0) + 1);
        patch.status.phase = 'Ready';
      }
    }
    running = await startOperator(kc, namespace, [Handlers], {
      storage: 'status',
      logger: logs.logger,
    });
    for (const name of ['a', 'b']) {
      await objects().createNamespacedCustomObject({
        group: GROUP,
        version: 'v1',
        plural: 'gadgets',
        namespace,
        body: { apiVersion: API, kind: 'Gadget', metadata: { name }, spec: {} },
      });
    }

    await waitFor(
      () =>
        runs.size === 2 &&
        writesTo(running!.requests, 'a').length >= 2 &&
        writesTo(running!.requests, 'b').length >= 1,
      { what: 'both gadgets handled' },
    );
    await settle(1_500);
    expect([...runs.values()]).toEqual([1, 1]);
    for (const name of ['a', 'b']) {
      const gadget = (await objects().getNamespacedCustomObject({
        group: GROUP,
        version: 'v1',
        plural: 'gadgets',
        namespace,
        name,
      })) as KubeObject;
      expect(gadget.metadata?.annotations?.[DIFF_BASE_KEY]).toEqual(expect.any(String));
      expect(gadget.status).toEqual({ phase: 'Ready' });
    }
    const errors = logs.containing('dropped status["konductor.dev"]');
    expect(errors).toHaveLength(1);
    expect(errors[0]?.msg).toContain('x-kubernetes-preserve-unknown-fields');
  });

  test('a retry carries on across a restart: the progress record in the status keeps its attempt count', async () => {
    const { kc, namespace } = await widgetNamespace('status-retry');
    const attempts: number[] = [];
    class Handlers {
      @on.create(WIDGET_API_VERSION, 'widgets')
      async created({ retry, patch }: ChangeContext): Promise<void> {
        attempts.push(retry);
        if (retry === 0) throw new TemporaryError('not yet', { delay: 2 });
        patch.status.phase = 'Ready';
      }
    }
    running = await startOperator(kc, namespace, [Handlers], { storage: 'status' });
    await new Widgets(kc, namespace).create('w');
    const section = async (): Promise<Record<string, unknown> | undefined> =>
      (
        (await getWidget(namespace, 'w')).status as
          Record<string, Record<string, unknown>> | undefined
      )?.['konductor.dev'];
    await waitFor(async () => (await section())?.progress !== undefined, {
      what: 'the progress record of the first attempt',
    });
    await running.stop();

    running = await startOperator(kc, namespace, [Handlers], { storage: 'status' });
    await waitFor(async () => (await getWidget(namespace, 'w')).status?.phase === 'Ready', {
      what: 'the retry after the restart',
    });

    expect(attempts).toEqual([0, 1]);
    expect(await section()).not.toHaveProperty('progress.created');
    expect((await getWidget(namespace, 'w')).metadata?.annotations ?? {}).toEqual({});
  });
});
